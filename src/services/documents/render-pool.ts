import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Piscina } from 'piscina';
import { RenderRefusedError } from './document-renderer.js';
import type { DocumentView } from './document-view.js';

/** How long an idle render thread stays up: a burst reuses warm threads, a quiet server holds none. */
const IDLE_MS = 30_000;

/**
 * The worker's file: the TypeScript source beside this one under tsx and vitest, else the
 * bundle's `render-worker.js` (a second entry point of `npm run build`), beside `main.js`,
 * which this code is part of or whose `chunks/` folder holds it.
 */
function workerFile(): { file: string; typescript: boolean } {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.ts')) return { file: join(dirname(here), 'render-worker.ts'), typescript: true };
  for (const dir of [dirname(here), dirname(dirname(here))]) {
    const file = join(dir, 'render-worker.js');
    if (existsSync(file)) return { file, typescript: false };
  }
  throw new Error(`render-worker.js is missing beside ${here}: build with npm run build`);
}

/**
 * A small pool of worker threads that turn document views into PDF bytes, off the event loop.
 * No thread starts until the first document; close() ends them, so that tests, the CLI and a
 * stopping server exit cleanly.
 */
export class RenderPool {
  private pool: Promise<Piscina> | null = null;
  private closed = false;

  /** `threads`: PDF_WORKERS. */
  constructor(readonly threads: number) {}

  async render(view: DocumentView): Promise<Buffer> {
    // A request that arrives while the server stops must not start threads nobody will end.
    if (this.closed) throw new RenderRefusedError('service_unavailable', 'The server is stopping; retry shortly.', 1);
    this.pool ??= this.open();
    const bytes: Uint8Array = await (await this.pool).run(view);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Ends the threads; renders still queued are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = null;
    if (pool) await (await pool).destroy();
  }

  private async open(): Promise<Piscina> {
    const { Piscina } = await import('piscina');
    const { file, typescript } = workerFile();
    return new Piscina({
      filename: file,
      minThreads: 0,
      maxThreads: this.threads,
      idleTimeout: IDLE_MS,
      // A worker of TypeScript source loads it through tsx, as the process itself does.
      execArgv: typescript ? ['--import', 'tsx'] : undefined,
    });
  }
}
