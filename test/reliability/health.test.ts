import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { pgChaos, type PgChaos } from '../helpers/reliability/pg-chaos.js';
import { call, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

/*
 * The probes of a real server process: /healthz answers while the process lives, /readyz turns
 * 503 naming the failed check when the database stops answering or its schema falls behind,
 * and 200 again when it comes back.
 */

/** Runs one statement on the test database from outside the server (the operator's psql / sqlite3). */
async function sql(db: TestDatabase, statement: string): Promise<void> {
  if (db.kind === 'sqlite') {
    const conn = new Database(db.url.slice('sqlite:'.length));
    try {
      conn.pragma('busy_timeout = 10000');
      conn.exec(statement);
    } finally {
      conn.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

describe.each(DATABASES)('health probes on %s', (kind) => {
  let db: TestDatabase;
  let server: ServerProcess;

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    server = await startServerProcess({ databaseUrl: db.url });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
  });

  it('answer at the host root, outside the API mount, without credentials', async () => {
    const live = await call(server.url, 'GET', '/healthz');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ status: 'ok', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    const ready = await call(server.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ready',
      checks: {
        database: { ok: true, detail: null },
        schema: { ok: true, detail: null },
        gateway: { ok: true, detail: null },
        // Shown, never counted; these servers run with the in-server pass off.
        scheduler: expect.objectContaining({ ok: true, interval_seconds: 0, stalled: false, last_outcome: null }),
      },
    });
    expect((await call(server.url, 'GET', '/readyz/')).status).toBe(200);
    const post = await call(server.url, 'POST', '/readyz');
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    // No session is started by a probe.
    expect(ready.headers.getSetCookie()).toEqual([]);
    // They live at the root only, as the contract's path-level `servers` says.
    expect((await call(server.url, 'GET', '/api/subscriptions/healthz/')).status).toBe(404);
  });

  it('/readyz is 503 naming the schema while a migration is missing, and 200 once it is back', async () => {
    const table = 'mikro_orm_migrations';
    await sql(db, `CREATE TABLE migrations_backup AS SELECT * FROM ${table}`);
    await sql(db, `DELETE FROM ${table} WHERE id = (SELECT max(id) FROM migrations_backup)`);
    const behind = await call(server.url, 'GET', '/readyz');
    expect(behind.status).toBe(503);
    expect(behind.body.status).toBe('not_ready');
    expect(behind.body.checks.database.ok).toBe(true);
    expect(behind.body.checks.schema).toMatchObject({ ok: false, detail: expect.stringContaining('db migrate') });
    expect((await call(server.url, 'GET', '/healthz')).status).toBe(200);

    await sql(db, `INSERT INTO ${table} SELECT * FROM migrations_backup WHERE id NOT IN (SELECT id FROM ${table})`);
    await sql(db, 'DROP TABLE migrations_backup');
    expect((await call(server.url, 'GET', '/readyz')).status).toBe(200);
  });
});

describe.runIf(process.env.TEST_DATABASE_URL)('/readyz through a PostgreSQL outage', () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let chaos: PgChaos;

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    server = await startServerProcess({ databaseUrl: db.url });
    chaos = await pgChaos(db.url);
  });
  afterAll(async () => {
    await server?.stop();
    await chaos?.close();
    await db?.drop();
  });

  it('turns 503 naming the database while it refuses connections, and 200 when it returns', async () => {
    expect((await call(server.url, 'GET', '/readyz')).status).toBe(200);
    const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await admin.connect();
    const name = new URL(db.url).pathname.slice(1);
    try {
      // The database "stops" for this server: no new connection, every open one cut.
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await chaos.cutConnections();
      const down = await call(server.url, 'GET', '/readyz');
      expect(down.status).toBe(503);
      expect(down.body.status).toBe('not_ready');
      expect(down.body.checks.database).toMatchObject({ ok: false });
      expect(down.body.checks.gateway).toEqual({ ok: true, detail: null });
      // Liveness does not depend on the database: the orchestrator must not restart the process.
      expect((await call(server.url, 'GET', '/healthz')).status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
      await admin.end();
    }
    const back = await call(server.url, 'GET', '/readyz');
    expect(back.status).toBe(200);
    expect(back.body.status).toBe('ready');
  });
});
