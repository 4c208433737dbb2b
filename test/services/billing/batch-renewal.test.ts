import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../../src/config.js';
import { Plan } from '../../../src/db/entities/plan.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { User } from '../../../src/db/entities/user.js';
import { Wallet } from '../../../src/db/entities/wallet.js';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { ManualClock } from '../../../src/domain/clock.js';
import { MidtransClient } from '../../../src/gateway/midtrans-client.js';
import { renewPlainWalletBatch } from '../../../src/services/billing/batch-renewal.js';
import { runBilling, type BillingRunReport } from '../../../src/services/billing/run-billing.js';
import type { ServiceContext } from '../../../src/services/context.js';
import { seedPlans, type PlanSeed } from '../../../src/services/plans/seed-plans.js';
import { createSubscription } from '../../../src/services/subscriptions/create-subscription.js';
import { adjustWallet } from '../../../src/services/wallet/adjust-wallet.js';
import { verifyWallets } from '../../../src/services/wallet/verify-wallets.js';
import { createTestDatabase, DATABASES, type DatabaseKind, type TestDatabase } from '../../helpers/database.js';
import { STANDARD_PLANS } from '../../helpers/server.js';
import { cliActor } from '../../../src/services/audit/actor.js';

/*
 * The batched billing run must leave the database exactly as the per-subscription run does:
 * two databases seeded alike, one billed with `batch: false`, the other batched, every table
 * compared row by row (generated ids, order ids, invoice numbers and update stamps named by
 * what they belong to instead).
 */

const SEEDED_AT = new Date('2027-01-31T10:00:00.000Z');
const RUN_AT = new Date('2027-02-28T10:00:00.000Z');
const PLANS: PlanSeed[] = [
  ...STANDARD_PLANS,
  { slug: 'odd-price', name: 'Odd price', description: 'Not a round sum', price: 12345, currency: 'IDR', interval: 1, interval_unit: 'month' },
  { slug: 'one-cycle', name: 'One month', description: 'Ends after one paid month', price: 30000, currency: 'IDR', interval: 1, interval_unit: 'month', max_cycles: 1 },
];

interface World {
  db: TestDatabase;
  orm: Orm;
  clock: ManualClock;
  config: Config;
  ctx(): ServiceContext;
  close(): Promise<void>;
}

const opened: World[] = [];
afterAll(async () => {
  for (const w of opened) await w.close();
});

async function openWorld(kind: DatabaseKind): Promise<World> {
  const db = await createTestDatabase(kind);
  const orm = await openOrm(db.url, { create: true });
  await migrateUp(orm);
  // SMTP and an outbound webhook configured: every notification also has its delivery rows.
  const config = loadConfig({
    DATABASE_URL: db.url,
    SESSION_SECRET: 'batch-test',
    LOG_REQUESTS: 'false',
    SMTP_URL: 'smtp://127.0.0.1:9',
    OUTBOUND_WEBHOOK_URL: 'http://127.0.0.1:9/hook',
  });
  const clock = new ManualClock(SEEDED_AT);
  // Wallet payments never reach the gateway; a context needs one all the same.
  const gateway = new MidtransClient({ baseUrl: 'http://127.0.0.1:9', serverKey: 'batch-test' });
  const w: World = {
    db,
    orm,
    clock,
    config,
    ctx: () => ({ em: orm.em.fork(), config, gateway, clock }),
    async close() {
      await orm.close(true);
      await db.drop();
    },
  };
  opened.push(w);
  return w;
}

type Kind = 'plain' | 'pro' | 'odd' | 'short' | 'usd' | 'plan_change' | 'trial' | 'cancel_at_end' | 'behind' | 'inactive_wallet' | 'last_cycle';

/** The population, the same in every world: mostly plain renewals, and each kind that must not be batched. */
const POPULATION: Kind[] = [
  ...Array<Kind>(40).fill('plain'),
  'pro', 'pro', 'odd', 'odd', 'short', 'short', 'short', 'usd', 'plan_change', 'plan_change', 'trial', 'trial',
  'cancel_at_end', 'cancel_at_end', 'behind', 'behind', 'inactive_wallet', 'last_cycle',
];

const SLOW: readonly Kind[] = ['short', 'usd', 'plan_change', 'trial', 'cancel_at_end', 'behind', 'inactive_wallet', 'last_cycle'];

async function seed(w: World, population: readonly Kind[] = POPULATION): Promise<Map<string, Kind>> {
  await seedPlans(w.ctx(), PLANS);
  const kinds = new Map<string, Kind>();
  for (const [i, kind] of population.entries()) {
    const em = w.orm.em.fork();
    const username = `u${String(i).padStart(3, '0')}-${kind}`;
    // Every fifth user has no email address: no email notification for them.
    const user = em.create(User, { username, email: i % 5 === 0 ? null : `${username}@example.com`, passwordHash: 'x', createdAt: SEEDED_AT, updatedAt: SEEDED_AT } as User);
    await em.flush();
    const plan = { pro: 'pro-monthly', odd: 'odd-price', usd: 'usd-monthly', trial: 'pro-trial', behind: 'weekly', last_cycle: 'one-cycle' }[kind as string] ?? 'basic-monthly';
    // Enough for the first payment and one renewal (three renewals for the weekly plan), except 'short'.
    const funds = { short: '60000', pro: '400000', trial: '400000', usd: '100000', behind: '200000', odd: '30000' }[kind as string] ?? '150000';
    await adjustWallet(w.ctx(), { actor: cliActor(), user, amount: funds, reason: 'test funds' });
    const { subscription } = await createSubscription(w.ctx(), user, { planId: plan, paymentType: 'wallet' }).catch(async (err) => {
      if (kind !== 'usd') throw err;
      // A USD plan cannot be paid from an IDR wallet: made directly, as a subscription moved between plans would be.
      return { subscription: await subscribeDirectly(w, user, plan) };
    });
    kinds.set(subscription.id, kind);
    const update: Partial<Subscription> = {};
    if (kind === 'plan_change') update.pendingPlan = await em.findOneOrFail(Plan, { slug: 'pro-monthly' });
    if (kind === 'cancel_at_end') Object.assign(update, { cancelAtPeriodEnd: true, cancelReason: 'too expensive' });
    if (Object.keys(update).length > 0) await w.orm.em.fork().nativeUpdate(Subscription, { id: subscription.id }, update);
    if (kind === 'inactive_wallet') await w.orm.em.fork().nativeUpdate(Wallet, { user: user.id }, { isActive: false });
  }
  return kinds;
}

async function subscribeDirectly(w: World, user: User, slug: string): Promise<Subscription> {
  const em = w.orm.em.fork();
  const plan = await em.findOneOrFail(Plan, { slug });
  const end = new Date('2027-02-28T10:00:00.000Z');
  const sub = em.create(Subscription, {
    user: user.id, plan, status: 'active', liveUserId: user.id, paymentType: 'wallet', metadata: {}, customerDetails: {},
    billingAnchor: SEEDED_AT, currentPeriodStart: SEEDED_AT, currentPeriodEnd: end, nextBillingDate: end, cyclesCompleted: 1, createdAt: SEEDED_AT,
  } as never) as Subscription;
  await em.flush();
  return sub;
}

// ---- normalised dumps -------------------------------------------------------------------

type Rec = Record<string, unknown>;

async function tables(w: World): Promise<string[]> {
  const em = w.orm.em.fork();
  const rows = (w.db.kind === 'sqlite'
    ? await em.execute(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`)
    : await em.execute(`select table_name as name from information_schema.tables where table_schema = 'public'`)) as { name: string }[];
  // access_versions counts writes (it invalidates per-process caches), and the per-subscription
  // path writes a subscription more often than one set-based statement: not billing state.
  // audit_events holds the wallet funding of the test's set-up (by the operator's adjustment),
  // stamped with the wall clock: a billing run writes none of its own.
  return rows.map((r) => r.name).filter((n) => !n.startsWith('mikro_orm') && n !== 'access_versions' && n !== 'audit_events').sort();
}

async function rowsOf(w: World, table: string): Promise<Rec[]> {
  return (await w.orm.em.fork().execute(`select * from ${table}`)) as Rec[];
}

/** Columns stamped with the machine's time rather than the billing clock. */
const wallClock = (table: string, column: string) => column === 'updated_at' || (table === 'plans' && column === 'created_at');

const stamp = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null || v === undefined ? 'none' : String(v));

/**
 * Every table with ids, order ids and invoice numbers replaced by labels made of what the row
 * belongs to (user name, plan slug, billing reason and period…), update stamps removed. Invoice
 * numbers are handed out in billing order, which the batch changes; they are checked apart.
 */
async function dump(w: World): Promise<Record<string, Rec[]>> {
  const raw: Record<string, Rec[]> = {};
  for (const t of await tables(w)) raw[t] = await rowsOf(w, t);
  const label = new Map<string, string>();
  const put = (key: unknown, value: string) => {
    if (key !== null && key !== undefined) label.set(String(key), value);
  };
  for (const u of raw.users) put(u.id, `user:${u.username}`);
  for (const p of raw.plans) put(p.id, `plan:${p.slug}`);
  const userOf = (id: unknown) => label.get(String(id))!.slice('user:'.length);
  for (const s of raw.subscriptions) put(s.id, `sub:${userOf(s.user_id)}`);
  for (const x of raw.wallets) put(x.id, `wallet:${userOf(x.user_id)}`);
  for (const i of raw.invoices) {
    const name = `invoice:${userOf(i.user_id)}:${i.billing_reason}:${stamp(i.period_start)}`;
    put(i.id, name);
    put(i.number, `number(${name})`);
  }
  for (const l of raw.invoice_lines) put(l.id, `line:${label.get(String(l.invoice_id))}:${l.position}`);
  // Rows made at the same instant (a subscription catching up on cycles) are told apart by what
  // they refer to, named already (ids exactly; JSON as text on SQLite).
  let known: { size: number; pattern: RegExp } | null = null;
  const relabel = (text: string): string => {
    if (known?.size !== label.size) {
      const keys = [...label.keys()].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      known = { size: label.size, pattern: new RegExp(keys.join('|'), 'g') };
    }
    return text.replace(known.pattern, (m) => label.get(m)!);
  };
  const named = (v: unknown): string =>
    JSON.stringify(typeof v === 'string' && v.startsWith('{') ? JSON.parse(v) : v, (_k, x) => (typeof x === 'string' ? relabel(x) : x));
  const content = (r: Rec) => named(Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'id' && !wallClock('', k)).map(([k, v]) => [k, named(v)])));
  const byCreation = (a: Rec, b: Rec) => stamp(a.created_at).localeCompare(stamp(b.created_at)) || content(a).localeCompare(content(b));
  const nth = new Map<string, number>();
  const numbered = (prefix: string) => {
    const n = (nth.get(prefix) ?? 0) + 1;
    nth.set(prefix, n);
    return `${prefix}#${n}`;
  };
  for (const p of [...raw.payments].sort(byCreation)) {
    const name = numbered(`payment:${label.get(String(p.invoice_id)) ?? userOf(p.user_id)}`);
    put(p.id, name);
    put(p.order_id, `order(${name})`);
  }
  for (const f of raw.period_funds ?? []) put(f.id, `fund:${label.get(String(f.payment_id))}:${stamp(f.period_start)}`);
  for (const g of raw.trial_grants ?? []) put(g.id, `trial:${userOf(g.user_id)}:${label.get(String(g.plan_id))}`);
  for (const e of [...raw.wallet_transactions].sort(byCreation)) put(e.id, numbered(`entry:${label.get(String(e.wallet_id))}:${e.source}`));
  // Notifications carry no reference of their own: named by user, type and channel.
  for (const n of [...raw.notifications].sort(byCreation)) put(n.id, numbered(`notification:${userOf(n.user_id)}:${n.notification_type}:${n.channel}`));

  const clean = (v: unknown): unknown => {
    if (typeof v === 'string') return label.get(v) ?? relabel(v);
    if (v instanceof Date) return v.toISOString();
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clean(x)]));
    return v;
  };
  const out: Record<string, Rec[]> = {};
  for (const [t, rows] of Object.entries(raw)) {
    out[t] = rows
      .map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !wallClock(t, k)).map(([k, v]) => [k, clean(v)])))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
  }
  return out;
}

/** Labels a subscription's id as its row's label in `dumped` (labels come from the user). */
function subscriptionLabels(kinds: Map<string, Kind>, raw: Rec[], users: Rec[]): Map<string, string> {
  const names = new Map(users.map((u) => [String(u.id), String(u.username)]));
  return new Map(raw.filter((s) => kinds.has(String(s.id))).map((s) => [String(s.id), `user:${names.get(String(s.user_id))}`]));
}

async function invoiceNumbers(w: World): Promise<number[]> {
  const rows = (await w.orm.em.fork().execute(`select number from invoices order by number`)) as { number: string }[];
  return rows.map((r) => Number(r.number.slice(-6)));
}

describe.each(DATABASES)('the batched billing run (%s)', (kind) => {
  it('writes exactly the rows the per-subscription run writes, and the same report', async () => {
    const [single, batched] = [await openWorld(kind), await openWorld(kind)];
    const kindsSingle = await seed(single);
    const kindsBatched = await seed(batched);
    const [seededOne, seededMany] = [await dump(single), await dump(batched)];
    for (const table of Object.keys(seededOne)) expect(seededMany[table], table).toEqual(seededOne[table]);

    for (const w of [single, batched]) w.clock.set(RUN_AT);
    const fallbacks: unknown[] = [];
    const one = await runBilling(single.ctx(), { batch: false });
    const many = await runBilling(batched.ctx(), { onBatchFallback: (e) => fallbacks.push(e) });
    expect(fallbacks).toEqual([]);

    const [before, after] = [await dump(single), await dump(batched)];
    for (const table of Object.keys(before)) expect(after[table], table).toEqual(before[table]);

    // The same report, subscription by subscription (ids named by their user).
    const labelsOne = subscriptionLabels(kindsSingle, await rowsOf(single, 'subscriptions'), await rowsOf(single, 'users'));
    const labelsMany = subscriptionLabels(kindsBatched, await rowsOf(batched, 'subscriptions'), await rowsOf(batched, 'users'));
    const named = (r: BillingRunReport, labels: Map<string, string>) => ({
      ...r,
      actions: r.actions.map((a) => ({ ...a, subscription_id: labels.get(a.subscription_id), invoice_number: a.invoice_number && 'numbered' })).sort((a, b) => a.subscription_id!.localeCompare(b.subscription_id!)),
      errors: r.errors.map((e) => ({ ...e, subscription_id: labels.get(e.subscription_id) })),
      renewal_failures: r.renewal_failures
        .map((f) => ({ ...f, subscription_id: labels.get(f.subscription_id), invoice_number: f.invoice_number && 'numbered' }))
        .sort((a, b) => a.subscription_id!.localeCompare(b.subscription_id!)),
    });
    expect(named(many, labelsMany)).toEqual(named(one, labelsOne));
    expect(many.renewed).toBeGreaterThan(40);
    expect(many.errors.map((e) => e.message)).toEqual(['The wallet is not active.']);

    // Invoice numbers: the same gap-free sequence from 1 in both.
    for (const w of [single, batched]) {
      const numbers = await invoiceNumbers(w);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));
    }
    expect(await invoiceNumbers(batched)).toEqual(await invoiceNumbers(single));

    // Exact money: a plain subscription paid 50,000.00 twice from 150,000.00; the ledger adds up.
    const em = batched.orm.em.fork();
    const plain = [...kindsBatched].filter(([, k]) => k === 'plain').map(([id]) => id);
    const subs = await em.find(Subscription, { id: { $in: plain } });
    const wallets = await em.find(Wallet, { user: { $in: subs.map((s) => s.user.id) } });
    expect(wallets.map((x) => x.balance)).toEqual(plain.map(() => '50000.00'));
    const odd = [...kindsBatched].filter(([, k]) => k === 'odd').map(([id]) => id);
    const oddWallets = await em.find(Wallet, { user: { $in: (await em.find(Subscription, { id: { $in: odd } })).map((s) => s.user.id) } });
    expect(oddWallets.map((x) => x.balance)).toEqual(['5310.00', '5310.00']);
    for (const w of [single, batched]) expect(await verifyWallets(w.ctx())).toMatchObject({ ok: true });
  }, 240_000);

  it('batches only plain wallet renewals that the wallet covers', async () => {
    const w = await openWorld(kind);
    const kinds = await seed(w);
    w.clock.set(RUN_AT);
    const steps = await renewPlainWalletBatch(w.ctx(), [...kinds.keys()].sort());
    const batchedKinds = new Set(steps.map((s) => kinds.get(s.subscriptionId)));
    expect([...batchedKinds].sort()).toEqual(['odd', 'plain', 'pro']);
    expect(steps).toHaveLength([...kinds.values()].filter((k) => !SLOW.includes(k)).length);
    expect(steps.every((s) => s.action === 'renew' && s.status === 'active' && s.counts.renewed === 1 && s.counts.charged === 1)).toBe(true);
    // The same page again: nothing left to batch (the period moved on).
    expect(await renewPlainWalletBatch(w.ctx(), [...kinds.keys()].sort())).toEqual([]);
  }, 240_000);

  it.skipIf(kind !== 'postgresql')('two runs at once renew each subscription exactly once, numbers gap-free', async () => {
    const w = await openWorld(kind);
    const kinds = await seed(w, [...Array<Kind>(300).fill('plain'), 'short', 'trial', 'plan_change']);
    const orms = [await openOrm(w.db.url), await openOrm(w.db.url)];
    try {
      const reports = await Promise.all(
        orms.map((orm) => runBilling({ em: orm.em.fork(), config: w.config, gateway: w.ctx().gateway, clock: w.clock }, { at: RUN_AT, chunkSize: 40 })),
      );
      expect(reports.flatMap((r) => r.errors)).toEqual([]);
      expect(reports[0].renewed + reports[1].renewed).toBe(303);
      expect(reports[0].renewed).toBeGreaterThan(0);
      expect(reports[1].renewed).toBeGreaterThan(0);
      const em = w.orm.em.fork();
      for (const id of kinds.keys()) {
        const rows = (await em.execute(`select count(*) as n from invoices where subscription_id = ? and billing_reason = 'subscription_cycle'`, [id])) as { n: string }[];
        expect(Number(rows[0].n), id).toBe(1);
      }
      const numbers = await invoiceNumbers(w);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));
      expect(await verifyWallets(w.ctx())).toMatchObject({ ok: true });
    } finally {
      for (const orm of orms) await orm.close(true);
    }
  }, 240_000);
});
