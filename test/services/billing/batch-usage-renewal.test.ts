import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { BillableMetric } from '../../../src/db/entities/billable-metric.js';
import { Invoice } from '../../../src/db/entities/invoice.js';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { User } from '../../../src/db/entities/user.js';
import { migrateUp, openOrm, type Orm } from '../../../src/db/orm.js';
import { ManualClock } from '../../../src/domain/clock.js';
import { parseUnits } from '../../../src/domain/usage/aggregation.js';
import type { PlanCharge } from '../../../src/domain/usage/charge-models.js';
import { MidtransClient } from '../../../src/gateway/midtrans-client.js';
import { cliActor } from '../../../src/services/audit/actor.js';
import { renewPlainWalletBatch } from '../../../src/services/billing/batch-renewal.js';
import { runBilling } from '../../../src/services/billing/run-billing.js';
import type { ServiceContext } from '../../../src/services/context.js';
import { createSubscription } from '../../../src/services/subscriptions/create-subscription.js';
import { eventStore, type PreparedEvent } from '../../../src/services/usage/event-store.js';
import { adjustWallet } from '../../../src/services/wallet/adjust-wallet.js';
import { createTestDatabase, DATABASES, type DatabaseKind, type TestDatabase } from '../../helpers/database.js';
import { makePlan } from '../../helpers/factories.js';

/*
 * The batched billing run (batch-renewal.ts) renews subscriptions whose plan has usage charges
 * in bulk, pricing a page's usage with one grouped query per metric (usageLinesMany). It must
 * bill exactly what the per-subscription path (renew) bills: two databases seeded alike with the
 * same events, one billed with `batch: false`, the other batched; their invoices compared line
 * by line, and the subscriptions' periods and usage windows.
 */

const SEEDED_AT = new Date('2027-01-31T10:00:00.000Z');
const PERIOD_END = new Date('2027-02-28T10:00:00.000Z');
const RUN_AT = new Date(PERIOD_END.getTime() + 60 * 60_000);
const HOUR = 3_600_000;

const CHARGES: PlanCharge[] = [
  { metric: 'calls', metric_name: 'API calls', model: 'graduated', properties: { tiers: [{ up_to: '5', unit_amount: '0', flat_amount: '0.00' }, { up_to: null, unit_amount: '250', flat_amount: '0.00' }] } },
  { metric: 'gb', metric_name: 'Transfer (GB)', model: 'standard', properties: { unit_amount: '1000.5' } },
];

type Kind = 'metered' | 'quiet' | 'plain' | 'cancel_at_end' | 'short';
const POPULATION: Kind[] = [...Array<Kind>(16).fill('metered'), 'quiet', 'quiet', 'plain', 'plain', 'cancel_at_end', 'short'];

interface World {
  db: TestDatabase;
  orm: Orm;
  clock: ManualClock;
  ctx(): ServiceContext;
}

const opened: World[] = [];
afterAll(async () => {
  for (const w of opened) {
    await w.orm.close(true);
    await w.db.drop();
  }
});

async function openWorld(kind: DatabaseKind): Promise<World> {
  const db = await createTestDatabase(kind);
  const orm = await openOrm(db.url, { create: true });
  await migrateUp(orm);
  const config = loadConfig({ DATABASE_URL: db.url, SESSION_SECRET: 'batch-usage-test', LOG_REQUESTS: 'false', USAGE_GRACE_MINUTES: '60' });
  const clock = new ManualClock(SEEDED_AT);
  const gateway = new MidtransClient({ baseUrl: 'http://127.0.0.1:9', serverKey: 'batch-usage-test' });
  const w: World = { db, orm, clock, ctx: () => ({ em: orm.em.fork(), config, gateway, clock }) };
  opened.push(w);
  return w;
}

/** The same subscriptions and events in every world: subscription i sends i calls and i/4 GB spread over its period. */
async function seed(w: World): Promise<Map<string, Kind>> {
  const em = w.orm.em.fork();
  const calls = em.create(BillableMetric, { code: 'calls', name: 'API calls', aggregation: 'count', field: null, filters: null } as BillableMetric);
  const gb = em.create(BillableMetric, { code: 'gb', name: 'Transfer (GB)', aggregation: 'sum', field: 'gb', filters: null } as BillableMetric);
  await em.flush();
  await makePlan(em, { slug: 'metered', name: 'Metered', price: '75000.00', taxBehavior: 'exclusive', charges: CHARGES });
  await makePlan(em, { slug: 'plain', name: 'Plain', price: '50000.00' });
  const kinds = new Map<string, Kind>();
  const events: PreparedEvent[] = [];
  for (const [i, kind] of POPULATION.entries()) {
    const uem = w.orm.em.fork();
    const user = uem.create(User, { username: `u${String(i).padStart(3, '0')}-${kind}`, email: null, passwordHash: 'x', createdAt: SEEDED_AT, updatedAt: SEEDED_AT } as User);
    await uem.flush();
    await adjustWallet(w.ctx(), { actor: cliActor(), user, amount: kind === 'short' ? '80000' : '1000000', reason: 'test funds' });
    const { subscription } = await createSubscription(w.ctx(), user, { planId: kind === 'plain' ? 'plain' : 'metered', paymentType: 'wallet' });
    kinds.set(subscription.id, kind);
    if (kind === 'cancel_at_end') await w.orm.em.fork().nativeUpdate(Subscription, { id: subscription.id }, { cancelAtPeriodEnd: true });
    if (kind === 'plain' || kind === 'quiet') continue;
    for (let n = 0; n < i + 2; n++) {
      // Hours apart from the period's start, some in its last partial hour, one after its end (not billed).
      const at = n === i + 1 ? new Date(PERIOD_END.getTime() + 1) : new Date(SEEDED_AT.getTime() + (n * 37 + 1) * HOUR + n * 1_003);
      const metric = n % 4 === 3 ? gb : calls;
      events.push({
        customerId: user.id, transactionId: `t${i}-${n}`, bodyHash: createHash('sha256').update(`${i}-${n}`).digest('hex'), subscriptionId: subscription.id, metricId: metric.id,
        timestamp: at, valueMicro: metric === gb ? parseUnits(`${n}.25`) : null, uniqueValue: null, counted: true, properties: '{}', receivedAt: at,
      } as PreparedEvent);
    }
  }
  await w.orm.em.fork().transactional((tx) => eventStore.insert(tx as never, events));
  return kinds;
}

/** Each subscription's invoices (named by its user), their lines, and its period and usage window. */
async function billed(w: World) {
  const em = w.orm.em.fork();
  const subs = await em.find(Subscription, {}, { populate: ['user'], orderBy: { user: { username: 'asc' } } });
  const out: Record<string, unknown> = {};
  for (const sub of subs) {
    const invoices = await em.find(Invoice, { subscription: sub }, { populate: ['lines'], orderBy: [{ billingReason: 'asc' }, { periodStart: 'asc' }] });
    out[sub.user.username] = {
      status: sub.status, periodEnd: sub.currentPeriodEnd?.toISOString(), usageBilledUntil: sub.usageBilledUntil?.toISOString() ?? null,
      invoices: invoices.map((i) => ({
        reason: i.billingReason, status: i.status, subtotal: i.subtotal, tax: i.taxAmount, total: i.totalAmount, period: [i.periodStart?.toISOString(), i.periodEnd?.toISOString()],
        lines: i.lines.getItems().map((l) => [l.kind, l.description, l.subject, l.amount, l.discountAmount, l.periodStart?.toISOString(), l.periodEnd?.toISOString()]),
      })),
    };
  }
  return out;
}

describe.each(DATABASES)('the batched run with usage charges (%s)', (kind) => {
  it('bills metered renewals in bulk exactly as the per-subscription path does', async () => {
    const [single, batched] = [await openWorld(kind), await openWorld(kind)];
    const kindsSingle = await seed(single);
    const kindsBatched = await seed(batched);
    expect([...kindsSingle.values()]).toEqual([...kindsBatched.values()]);

    for (const w of [single, batched]) w.clock.set(RUN_AT);
    await runBilling(single.ctx(), { batch: false });
    // The batch itself takes the metered renewals (and the plain ones) a wallet covers.
    const steps = await renewPlainWalletBatch(batched.ctx(), [...kindsBatched.keys()].sort());
    expect(steps.map((s) => kindsBatched.get(s.subscriptionId)).sort()).toEqual([...Array(16).fill('metered'), 'plain', 'plain', 'quiet', 'quiet']);
    const fallbacks: unknown[] = [];
    await runBilling(batched.ctx(), { onBatchFallback: (e) => fallbacks.push(e) });
    expect(fallbacks).toEqual([]);

    const [one, many] = [await billed(single), await billed(batched)];
    expect(many).toEqual(one);
    // Worked: subscription 4 sent 4 calls (the first 5 are free) and 3.25 GB in its period (its
    // last event came after the end): Rp 75.000 + Rp 0 + 3,25 x Rp 1.000,5 = Rp 3.251,625 → Rp 3.252.
    const fourth = one['u004-metered'] as { invoices: { reason: string; subtotal: string }[] };
    expect(fourth.invoices.find((i) => i.reason === 'subscription_cycle')!.subtotal).toBe('78252.00');
  }, 240_000);
});
