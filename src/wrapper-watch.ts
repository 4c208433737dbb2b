import { readFileSync } from 'node:fs';

/*
 * A wrapper that is killed outright (SIGKILL: nothing to relay) used to leave the server running
 * as an orphan. Started by a wrapper — npm or npx (npm_* variables), tsx (an IPC channel) — the
 * server stops as on SIGTERM when one of the wrappers above it is gone (npx → sh → tsx → node:
 * any of the three). Started directly by node it does not: under nohup, or from a shell that
 * exits, the server is meant to outlive its parent.
 *
 * NOTE: the chain is read when this module is evaluated, which main.ts makes the first thing the
 * process does, not once the server listens. Read after start-up (a database round trip after the
 * "listening" line), a wrapper killed in between had already left this process with init as its
 * parent: the chain came out empty and nothing was ever watched, an orphan about one start in
 * twenty on a loaded machine.
 */
interface Wrapper {
  pid: number;
  parent: number | null;
  command: string;
}

const startedByWrapper = Boolean(process.env.npm_lifecycle_event || process.env.npm_command) || Boolean(process.connected);
const wrappersAtStart: Wrapper[] = startedByWrapper ? wrapperAncestors() : [];

/**
 * Calls `onGone` when a wrapper that started this process is gone; nothing when none did. It may
 * be called again (the IPC channel's end and the check can both see it): `onGone` must be idempotent,
 * as main.ts's stop() is.
 */
export function watchWrappers(onGone: (why: string) => void): void {
  if (!startedByWrapper) return;
  process.once('disconnect', () => onGone('parent process gone'));
  if (wrappersAtStart.length === 0) return;
  // The nearest wrapper is read from /proc too: a parent that died has left this process with another.
  const gone = () => wrappersAtStart.find(({ pid, parent }, i) => !alive(pid) || (i === 0 ? (parentOf(process.pid) ?? process.ppid) : parentOf(pid)) !== (i === 0 ? pid : parent));
  const check = (): boolean => {
    const wrapper = gone();
    if (wrapper) onGone(`wrapper process ${wrapper.pid} (${wrapper.command}) gone`);
    return wrapper !== undefined;
  };
  if (check()) return;
  const timer = setInterval(() => check() && clearInterval(timer), 500).unref();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A process's parent, from /proc (Linux); null elsewhere or when it is gone. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

/**
 * The chain of wrappers above this process, nearest first: the parent always, then on Linux each
 * ancestor that is itself a wrapper (`sh -c`, npm, npx, tsx), up to the first that is not (a
 * login shell, a supervisor). Empty when the parent is init: nothing above to watch.
 */
function wrapperAncestors(): Wrapper[] {
  const chain: Wrapper[] = [];
  for (let pid: number | null = process.ppid; pid !== null && pid > 1 && chain.length < 6; ) {
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    } catch {
      // not Linux: the parent alone
    }
    const wrapper = /(^|\/)(sh|bash|dash) -c |(^|[\/ ])(npm|npx|npm-cli\.js|npx-cli\.js|tsx)( |$)|\/tsx\/dist\/cli\.m?js/.test(command);
    if (chain.length > 0 && !wrapper) break;
    const parent = parentOf(pid);
    chain.push({ pid, parent, command: command.split(' ').slice(0, 3).join(' ') || 'parent' });
    pid = parent;
  }
  return chain;
}
