/** What the bench scripts share: fresh databases to measure on, and waiting for a server. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Dialect } from '../src/db/dialect.js';

export interface BenchDatabase {
  url: string;
  drop: () => Promise<void>;
}

/** A new empty database: a SQLite file in a temporary folder, or a database made in BENCH_DATABASE_URL's server. */
export async function freshDatabase(kind: Dialect): Promise<BenchDatabase> {
  const id = `${Date.now()}_${randomBytes(3).toString('hex')}`;
  if (kind === 'sqlite') {
    const dir = join(tmpdir(), `billing-bench-${id}`);
    mkdirSync(dir, { recursive: true });
    return { url: `sqlite:${join(dir, 'bench.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = process.env.BENCH_DATABASE_URL;
  if (!admin) throw new Error('BENCH_DATABASE_URL names the PostgreSQL server to measure on');
  const name = `billing_bench_${id}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

/** Milliseconds until `url` answers 2xx (a server still starting answers 503 or refuses). */
export async function waitFor(url: string, timeoutMs = 30_000): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      if ((await fetch(url)).ok) return performance.now() - started;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > timeoutMs) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The node arguments the service runs with in production: those of package.json's `start:prod`
 * script (its V8 flags included), so that what is measured is what operators start.
 */
export function productionNodeArgs(root: string): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  const words = (pkg.scripts['start:prod'] ?? 'node dist/main.js').split(/\s+/).filter(Boolean);
  if (words[0] !== 'node') throw new Error(`start:prod must start with node: ${pkg.scripts['start:prod']}`);
  return words.slice(1);
}
