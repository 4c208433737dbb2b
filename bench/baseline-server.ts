/**
 * Bare Koa baselines on the same database as the service, with no validation, sessions or ORM:
 * what the hardware and driver can do for the same work. Modes:
 *   plans   — the plan-list query, answering the same JSON as GET /plans/
 *   select  — one indexed SELECT by user (the subscription of a user)
 *   insert  — one single-row INSERT in a transaction
 * Usage: tsx bench/baseline-server.ts MODE DATABASE_URL PORT
 */
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import Koa from 'koa';
import pg from 'pg';

const [mode, databaseUrl, port] = process.argv.slice(2);
const sqlite = databaseUrl.startsWith('sqlite:');

type Row = Record<string, unknown>;
let query: (sql: string, params: unknown[]) => Promise<Row[]>;
let insertInTransaction: (sql: string, params: unknown[]) => Promise<void>;

let close: () => Promise<void>;

if (sqlite) {
  const db = new Database(databaseUrl.slice('sqlite:'.length));
  close = async () => {
    db.close();
  };
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 10000');
  const cache = new Map<string, Database.Statement>();
  const stmt = (sql: string) => {
    let s = cache.get(sql);
    if (!s) cache.set(sql, (s = db.prepare(sql)));
    return s;
  };
  query = async (sql, params) => stmt(sql).all(...params) as Row[];
  insertInTransaction = async (sql, params) => {
    db.transaction(() => stmt(sql).run(...params))();
  };
} else {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  close = () => pool.end();
  query = async (sql, params) => (await pool.query(sql.replace(/\?/g, (_, i) => `$${countBefore(sql, i)}`), params)).rows;
  insertInTransaction = async (sql, params) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(sql.replace(/\?/g, (_, i) => `$${countBefore(sql, i)}`), params);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  };
}

function countBefore(sql: string, index: number): number {
  return sql.slice(0, index + 1).split('?').length - 1;
}

const money = (v: unknown) => (sqlite ? (Number(v) / 100).toFixed(2) : Number(v).toFixed(2));
const iso = (v: unknown) => new Date(sqlite ? Number(v) : (v as Date)).toISOString();

const app = new Koa();
app.use(async (ctx) => {
  if (mode === 'plans') {
    const rows = await query('select * from plans where status = ? order by sort_order asc, price asc, id asc limit 20', ['active']);
    const [{ n }] = await query('select count(*) as n from plans where status = ?', ['active']);
    ctx.body = {
      count: Number(n),
      next: null,
      previous: null,
      results: rows.map((p) => ({
        id: p.id,
        name: p.name,
        slug: p.slug,
        description: p.description,
        price: money(p.price),
        currency: p.currency,
        interval: p.interval,
        interval_unit: p.interval_unit,
        trial_period_days: p.trial_period_days,
        max_cycles: p.max_cycles,
        status: p.status,
        features: typeof p.features === 'string' ? JSON.parse(p.features) : p.features,
        sort_order: p.sort_order,
        created_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
      })),
    };
  } else if (mode === 'select') {
    const userId = ctx.get('x-user-id');
    if (!userId) {
      ctx.body = {}; // the readiness probe
      return;
    }
    const rows = await query('select * from subscriptions where user_id = ? and status in (?, ?) limit 1', [userId, 'active', 'trialing']);
    ctx.body = rows[0] ?? {};
  } else if (mode === 'insert') {
    const id = randomUUID();
    await insertInTransaction('insert into bench_inserts (id, payload, created_at) values (?, ?, ?)', [id, 'x'.repeat(200), sqlite ? Date.now() : new Date()]);
    ctx.status = 201;
    ctx.body = { id };
  }
});
const server = app.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
// Closed properly, SQLite checkpoints and removes its WAL; killed, it would leave the next
// process to recover a WAL of every baseline insert, which the service's start would pay for.
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void close().finally(() => process.exit(0));
});
