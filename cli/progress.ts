/*
 * Progress of a long run (`billing run`, `webhooks replay`, `subscriptions sync`) on stderr, so
 * that --json output on stdout stays one clean document. On a terminal: one line rewritten in
 * place, `[done/total] rate/s ETA m:ss` and what was done last. Not on a terminal (a log file, CI,
 * a pipe): plain lines, `[done/total]` and what was done, with no control characters.
 */

export interface Progress {
  /** One more item done: `done` of `total`, and what happened to it. */
  update(done: number, total: number, detail: string): void;
  /** Ends the in-place line on a terminal. */
  finish(): void;
}

export interface ProgressOptions {
  /** Default: whether stderr is a terminal. */
  tty?: boolean;
  /** Plain lines: print every n-th item (and the last); default every item. */
  every?: number;
  /** Where it is written (tests); default stderr. */
  write?: (text: string) => void;
  now?: () => number;
}

function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

/** `[done/total] 12.5/s ETA 0:42`: the rate since the start, and the time left at that rate. */
export function progressLine(done: number, total: number, elapsedMs: number): string {
  const rate = elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
  const eta = rate > 0 ? (total - done) / rate : Infinity;
  return `[${done}/${total}] ${rate >= 10 ? rate.toFixed(0) : rate.toFixed(1)}/s ETA ${clock(eta)}`;
}

export function startProgress(opts: ProgressOptions = {}): Progress {
  const tty = opts.tty ?? Boolean(process.stderr.isTTY);
  const write = opts.write ?? ((text: string) => void process.stderr.write(text));
  const now = opts.now ?? Date.now;
  const every = Math.max(1, opts.every ?? 1);
  const started = now();
  let lastDraw = 0;
  let drawn = false;
  return {
    update(done, total, detail) {
      if (!tty) {
        if (done % every === 0 || done === total) write(`[${done}/${total}] ${detail}\n`);
        return;
      }
      // At most ten redraws a second, and always the last one.
      const t = now();
      if (t - lastDraw < 100 && done !== total) return;
      lastDraw = t;
      const width = process.stderr.columns ?? 100;
      const line = `${progressLine(done, total, t - started)} ${detail}`;
      write(`\r\x1b[2K${line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line}`);
      drawn = true;
    },
    finish() {
      if (tty && drawn) write('\n');
      drawn = false;
    },
  };
}
