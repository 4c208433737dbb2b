import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli, type CliResult } from './cli.js';

const root = resolve(import.meta.dirname, '../..');

/** A release of this project checked out beside the tree, run with this tree's node_modules. */
export interface Release {
  dir: string;
  /** Its `billing-admin`, as an operator runs it (the bin registers tsx). */
  cli(args: string[], env: Record<string, string>, stdin?: string): Promise<CliResult>;
  /** Starts its server (`npm start`) and waits until it listens. */
  startServer(env: Record<string, string>): Promise<ReleaseServer>;
  remove(): void;
}

export interface ReleaseServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Extracts the release at `commit` from this repository's history (`git archive`), so that a test
 * runs the code that release shipped. Needs the commit in the clone: a shallow clone fails here
 * with a message that says so.
 */
export function checkoutRelease(commit: string): Release {
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: root, stdio: 'ignore' });
  } catch {
    throw new Error(`commit ${commit} is not in this clone: the upgrade test runs the previous release from the git history (git fetch --unshallow)`);
  }
  const dir = mkdtempSync(join(tmpdir(), `billing-release-${commit}-`));
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: root });
  // Its dependencies are this tree's (the release's package.json differs only where it does not matter to it).
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const bin = join(dir, 'cli/billing-admin.js');
  return {
    dir,
    cli: (args, env, stdin) => runCli(args, env, stdin, { entry: bin, cwd: dir }),
    startServer: (env) => startReleaseServer(dir, env),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer();
    probe.once('error', fail);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
  });
}

async function startReleaseServer(dir: string, env: Record<string, string>): Promise<ReleaseServer> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', LOG_REQUESTS: 'false', BILLING_SCHEDULER_INTERVAL: '0', PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`the release's server did not start within 60 s:\n${output}`)), 60_000);
    const read = (d: Buffer) => {
      output += d;
      const listening = /listening on (http:\/\/[^/\s]+)/.exec(output);
      if (listening) {
        clearTimeout(timer);
        done(listening[1]);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the release's server exited (${code}):\n${output}`));
    });
  });
  return {
    url,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}
