/**
 * Bare Koa baselines on the same database as the service, with no validation, sessions or ORM:
 * what the hardware and driver can do for the same work. Modes:
 *   plans   — the plan-list query, answering the same JSON as GET /plans/
 *   select  — one indexed SELECT by user (the subscription of a user)
 *   insert  — one single-row INSERT in a transaction
 *   settlement — the webhook's settlement by hand: the signature checked, then the service's
 *              own 11 statements in one transaction (the log row, the payment's subscription,
 *              the subscription and the payment locked with their joined rows, the period fund
 *              and two notifications inserted, subscription, invoice and payment updated), with
 *              none of its rules: what the driver and the database can do for that shape
 * Usage: tsx bench/baseline-server.ts MODE DATABASE_URL PORT
 */
import { createHash, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import Koa from 'koa';
import pg from 'pg';

const [mode, databaseUrl, port] = process.argv.slice(2);
const sqlite = databaseUrl.startsWith('sqlite:');

type Row = Record<string, unknown>;
let query: (sql: string, params: unknown[]) => Promise<Row[]>;
let insertInTransaction: (sql: string, params: unknown[]) => Promise<void>;
/** Runs `work` in one transaction; `run` executes one statement of it and returns its rows. */
let inTransaction: (work: (run: (sql: string, params: unknown[]) => Promise<Row[]>) => Promise<void>) => Promise<void>;

let close: () => Promise<void>;

if (sqlite) {
  const db = new Database(databaseUrl.slice('sqlite:'.length));
  close = async () => {
    db.close();
  };
  db.pragma('journal_mode = WAL');
  // The service's durability (src/db/orm.ts): each COMMIT flushed to disk.
  db.pragma('synchronous = FULL');
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
  // better-sqlite3 is synchronous: the whole transaction runs without yielding, as one writer.
  const ownTransaction: typeof inTransaction = async (work) => {
    stmt('begin immediate').run();
    try {
      await work(async (sql, params) => {
        const s = stmt(sql);
        return s.reader ? (s.all(...params) as Row[]) : (s.run(...params), []);
      });
      stmt('commit').run();
    } catch (error) {
      stmt('rollback').run();
      throw error;
    }
  };
  inTransaction = process.env.BASELINE_GROUP_COMMIT === '1' ? groupCommitted(stmt) : ownTransaction;
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
  inTransaction = async (work) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await work(async (sql, params) => (await client.query(sql.replace(/\?/g, (_, i) => `$${countBefore(sql, i)}`), params)).rows);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  };
}

/**
 * BASELINE_GROUP_COMMIT=1 (SQLite, an experiment, not a baseline the bench runs): settlements
 * that wait while one runs share the next transaction, a savepoint each, and one COMMIT, as the
 * service's src/db/commit-groups.ts does; what the same statements gain from grouping alone.
 */
function groupCommitted(stmt: (sql: string) => Database.Statement): typeof inTransaction {
  type Member = { work: Parameters<typeof inTransaction>[0]; done: (error?: unknown) => void };
  const waiting: Member[] = [];
  let draining = false;
  const run = async (sql: string, params: unknown[]) => {
    const s = stmt(sql);
    return s.reader ? (s.all(...params) as Row[]) : (s.run(...params), []);
  };
  const drain = async () => {
    draining = true;
    while (waiting.length > 0) {
      // One turn of the event loop, so that the requests waiting on their sockets join.
      await new Promise((resolve) => setImmediate(resolve));
      const members = waiting.splice(0, 32);
      const failures: unknown[] = [];
      stmt('begin immediate').run();
      for (const member of members) {
        stmt('savepoint m').run();
        try {
          await member.work(run);
          failures.push(undefined);
        } catch (error) {
          stmt('rollback to m').run();
          failures.push(error ?? new Error('failed'));
        }
        stmt('release m').run();
      }
      stmt('commit').run();
      members.forEach((member, i) => member.done(failures[i]));
    }
    draining = false;
  };
  return (work) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ work, done: (error) => (error ? reject(error) : resolve()) });
      if (!draining) void drain();
    });
}

function countBefore(sql: string, index: number): number {
  return sql.slice(0, index + 1).split('?').length - 1;
}

const money = (v: unknown) => (sqlite ? (Number(v) / 100).toFixed(2) : Number(v).toFixed(2));
const iso = (v: unknown) => new Date(sqlite ? Number(v) : (v as Date)).toISOString();

const SERVER_KEY = process.env.BENCH_SERVER_KEY ?? 'bench-server-key';
const DAY_MS = 86_400_000;
/** Dates as each driver stores them: epoch milliseconds on SQLite, Date on PostgreSQL. */
const at = (ms: number) => (sqlite ? ms : new Date(ms));
/** Money as stored: integer cents on SQLite, numeric text on PostgreSQL. */
const stored = (amount: string) => (sqlite ? Math.round(Number(amount) * 100) : amount);

async function readBody(req: NodeJS.ReadableStream): Promise<string> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body;
}

/** The settlement's statements, in the service's order, with fixed outcomes instead of its rules. */
async function settle(raw: string): Promise<number> {
  const n = JSON.parse(raw) as Record<string, string>;
  const expected = createHash('sha512').update(`${n.order_id}${n.status_code}${n.gross_amount}${SERVER_KEY}`).digest('hex');
  if (expected !== n.signature_key) return 401;
  const now = Date.now();
  let found = true;
  await inTransaction(async (run) => {
    await run(
      'insert into webhook_logs (id, order_id, transaction_status, payload, ip_address, status, error, attempts, source, dedup_key, processed_at, created_at, updated_at) values (?, ?, ?, ?, ?, ?, null, 1, ?, ?, ?, ?, ?)',
      // The key is unique per request: a body sent twice is settled twice (no deduplication here).
      [randomUUID(), n.order_id, n.transaction_status, raw, '127.0.0.1', 'processed', 'gateway', `${n.order_id}|${randomUUID()}`, at(now), at(now), at(now)],
    );
    const [seen] = await run('select p.id, p.subscription_id from payments p where p.order_id = ? limit 1', [n.order_id]);
    if (!seen) {
      found = false;
      return;
    }
    const lock = sqlite ? '' : ' for update of s';
    const [sub] = await run(`select s.*, p.name as plan_name, p.interval, p.interval_unit, u.email from subscriptions s join plans p on s.plan_id = p.id join users u on s.user_id = u.id where s.id = ? limit 1${lock}`, [seen.subscription_id]);
    const [payment] = await run(`select p.*, i.number as invoice_number, i.status as invoice_status, u.email from payments p left join invoices i on p.invoice_id = i.id join users u on p.user_id = u.id where p.id = ? limit 1${lock.replace(' s', ' p')}`, [seen.id]);
    const end = now + 30 * DAY_MS;
    await run('insert into period_funds (id, subscription_id, payment_id, amount, period_start, period_end, created_at) values (?, ?, ?, ?, ?, ?, ?)', [
      randomUUID(), sub.id, payment.id, stored(n.gross_amount), at(now), at(end), at(now),
    ]);
    const notification = '(?, ?, ?, ?, ?, ?, ?, ?, null, null, 0, null, null, ?)';
    await run(
      `insert into notifications (id, user_id, notification_type, channel, status, title, message, data, read_at, sent_at, attempts, last_error, next_attempt_at, created_at) values ${notification}, ${notification}`,
      [
        randomUUID(), payment.user_id, 'payment_succeeded', 'in_app', 'queued', 'Payment received', `We received ${n.currency} ${n.gross_amount} for order ${n.order_id}. Thank you.`,
        JSON.stringify({ payment_id: payment.id, order_id: n.order_id, amount: n.gross_amount, currency: n.currency }), at(now),
        randomUUID(), sub.user_id, 'subscription_activated', 'in_app', 'queued', 'Subscription active', `Your ${String(sub.plan_name)} subscription is active.`,
        JSON.stringify({ subscription_id: sub.id, status: 'active', current_period_end: new Date(end).toISOString() }), at(now),
      ],
    );
    await run(
      'update subscriptions set status = ?, live_user_id = ?, current_period_start = ?, current_period_end = ?, next_billing_date = ?, billing_anchor = ?, cycles_completed = cycles_completed + 1, updated_at = ? where id = ?',
      ['active', sub.user_id, at(now), at(end), at(end), at(now), at(now), sub.id],
    );
    await run('update invoices set status = ?, paid_at = ?, updated_at = ? where id = ?', ['paid', at(now), at(now), payment.invoice_id]);
    await run('update payments set status = ?, transaction_id = ?, fraud_status = ?, gateway_status = ?, paid_at = ?, updated_at = ? where id = ?', [
      'settled', n.transaction_id, n.fraud_status ?? null, n.transaction_status, at(now), at(now), payment.id,
    ]);
  });
  return found ? 200 : 404;
}

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
  } else if (mode === 'settlement') {
    if (ctx.method !== 'POST') {
      ctx.body = {}; // the readiness probe
      return;
    }
    ctx.status = await settle(await readBody(ctx.req));
    ctx.body = { status: ctx.status === 200 ? 'ok' : 'refused' };
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
