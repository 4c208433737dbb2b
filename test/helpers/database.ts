import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export type DatabaseKind = 'sqlite' | 'postgresql';

/** SQLite always; PostgreSQL too when TEST_DATABASE_URL is set (docs/contributing.md, 'Tests'). */
export const DATABASES: DatabaseKind[] = process.env.TEST_DATABASE_URL ? ['sqlite', 'postgresql'] : ['sqlite'];

export interface TestDatabase {
  kind: DatabaseKind;
  url: string;
  drop(): Promise<void>;
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh, empty database of the given kind; migrations run when the app starts. */
export async function createTestDatabase(kind: DatabaseKind): Promise<TestDatabase> {
  const suffix = `${process.pid}_${randomBytes(4).toString('hex')}`;
  if (kind === 'sqlite') {
    const file = join(tmpdir(), `billing-test-${suffix}.sqlite`);
    return {
      kind,
      url: `sqlite:${file}`,
      async drop() {
        for (const ext of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${ext}`, { force: true });
      },
    };
  }
  const name = `billing_test_${suffix}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    kind,
    url: url.toString(),
    async drop() {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
