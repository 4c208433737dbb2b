import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import type { BillingRunAction } from '../../src/services/billing/run-billing.js';
import { cancelSubscription } from '../../src/services/subscriptions/cancel-subscription.js';
import { pauseSubscription } from '../../src/services/subscriptions/pause-subscription.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';
import { serverForCli } from '../helpers/cli-server.js';
import { startBilling, type BillingHarness } from '../helpers/billing.js';

/*
 * Issue 30: `--dry-run` of `billing run` and of `webhooks replay` predicts exactly what the real
 * command then does on the same database, action for action and amount for amount. What only
 * the gateway can answer (a charge sent to it) is said to be unknown, never guessed.
 */

/** An action as `billing run --json` prints it. */
type Action = BillingRunAction;

interface ReplayRow {
  id: string;
  result: string;
  changes: string[];
  error: string | null;
  webhook_log: { status: string };
}

const T = '2027-03-04T10:00:00Z';
/** Counters a gateway's answer moves; every other counter must be predicted exactly. */
const GATEWAY_DECIDED = ['charged', 'pending', 'failed', 'past_due', 'merchant_failed'];
const PREVIEW_OF: Record<string, string> = { processed: 'would_process', failed: 'would_fail' };

function bySubscription(actions: Action[]): Map<string, Action[]> {
  const map = new Map<string, Action[]>();
  for (const a of actions) map.set(a.subscription_id, [...(map.get(a.subscription_id) ?? []), a]);
  return map;
}

describe.each(DATABASES)('dry run against the real run on the same database (%s)', (kind) => {
  let h: BillingHarness;
  let env: Record<string, string>;
  const subs: Record<string, string> = {};
  beforeAll(async () => {
    h = await startBilling(kind);
    env = { DATABASE_URL: h.server.db.url, BILLING_URL: h.server.url };
  });
  afterAll(async () => {
    await h?.stop();
  });

  const em = () => h.server.running.billing.orm.em.fork();
  const at = (time: string) => h.clock.set(new Date(time));

  async function snapshot() {
    const e = em();
    return {
      subscriptions: (await e.find(Subscription, {}, { orderBy: { id: 'asc' } })).map((s) => [s.id, s.status, s.currentPeriodEnd?.toISOString(), s.cyclesCompleted]),
      invoices: await e.count(Invoice, {}),
      payments: (await e.find(Payment, {}, { orderBy: { id: 'asc' } })).map((p) => [p.id, p.status]),
      wallets: (await e.find(Wallet, {}, { orderBy: { id: 'asc' } })).map((w) => [w.id, w.balance]),
      ledger: await e.count(WalletTransaction, {}),
      notifications: await e.count(Notification, {}),
      logs: (await e.find(WebhookLog, {}, { orderBy: { id: 'asc' } })).map((l) => [l.id, l.status, l.attempts, l.dedupKey]),
      topups: (await e.find(Topup, {}, { orderBy: { id: 'asc' } })).map((t) => [t.id, t.status]),
    };
  }

  it('billing run: the dry run predicts every action, invoice number, amount and status; the gateway charges it says it cannot know', async () => {
    // In dunning since the renewal of 2027-02-28: the wallet is still short (retry fails) / was funded since (retry pays).
    at('2027-01-31T10:00:00Z');
    const shortUser = await h.user();
    await h.fund(shortUser, '50000');
    subs.dunningShort = (await h.subscribe(shortUser, 'basic-monthly', 'wallet')).id;
    const fundedUser = await h.user();
    await h.fund(fundedUser, '50000');
    subs.dunningFunded = (await h.subscribe(fundedUser, 'basic-monthly', 'wallet')).id;

    at('2027-02-03T10:00:00Z');
    const walletUser = await h.user();
    await h.fund(walletUser, '100000');
    subs.wallet = (await h.subscribe(walletUser, 'basic-monthly', 'wallet')).id; // plain renewal (the batch)
    const poorUser = await h.user();
    await h.fund(poorUser, '50000');
    subs.walletShort = (await h.subscribe(poorUser, 'basic-monthly', 'wallet')).id; // declined, past_due
    subs.card = (await h.subscribe(await h.user(), 'pro-monthly', 'credit_card', 'sim-card-accept-4811')).id; // the gateway decides
    subs.bank = (await h.subscribe(await h.user(), 'pro-monthly', 'bank_transfer')).id; // the gateway decides
    await h.server.running.billing.simulator!.act((await h.payments(subs.bank))[0].orderId, 'settle');
    const pausedUser = await h.user();
    await h.fund(pausedUser, '100000');
    subs.paused = (await h.subscribe(pausedUser, 'basic-monthly', 'wallet')).id;
    await pauseSubscription(h.ctx(), pausedUser, subs.paused);
    const leavingUser = await h.user();
    await h.fund(leavingUser, '100000');
    subs.leaving = (await h.subscribe(leavingUser, 'basic-monthly', 'wallet')).id;
    await cancelSubscription(h.ctx(), leavingUser, subs.leaving, { reason: 'too expensive' });
    const lastUser = await h.user();
    await h.fund(lastUser, '100000');
    subs.lastCycle = (await h.subscribe(lastUser, 'three-cycles', 'wallet')).id;
    await em().nativeUpdate(Subscription, { id: subs.lastCycle }, { cyclesCompleted: 3 }); // expires
    const dailyUser = await h.user();
    await h.fund(dailyUser, '100000');
    subs.daily = (await h.subscribe(dailyUser, 'daily', 'wallet')).id; // several cycles behind: catches up step by step

    at('2027-02-17T10:00:00Z');
    const trialUser = await h.user();
    await h.fund(trialUser, '200000');
    subs.trialEnded = (await h.subscribe(trialUser, 'pro-trial', 'wallet')).id; // trial ends 03-03: first invoice
    at('2027-02-19T10:00:00Z');
    subs.trialEnding = (await h.subscribe(await h.user(), 'pro-trial', 'wallet')).id; // trial ends 03-05: notice

    at('2027-02-28T10:00:00Z');
    expect(await h.run()).toMatchObject({ errors: [] });
    expect((await h.sub(subs.dunningShort)).status).toBe('past_due');
    expect((await h.sub(subs.dunningFunded)).status).toBe('past_due');
    await h.fund(fundedUser, '50000');
    // The saved card expires before its next renewal: a card notice.
    const card = await h.sub(subs.card);
    await em().nativeUpdate(Subscription, { id: subs.card }, { cardTokenExpiresAt: new Date(card.nextBillingDate!.getTime() - 1000) });

    const before = await snapshot();
    const dry = await runCli(['billing', 'run', '--at', T, '--dry-run', '--json', '--allow-past'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(await snapshot(), 'a dry run writes nothing').toEqual(before);
    const real = await runCli(['billing', 'run', '--at', T, '--json', '--allow-past', '--force'], env);
    expect(real.code, real.stderr).toBe(0);
    expect(dry.json.dry_run).toBe(true);
    expect(real.json.dry_run).toBe(false);

    // Counters: exact, but for what the gateway's answers move; those add up to its charges.
    for (const [counter, value] of Object.entries(real.json)) {
      if (typeof value !== 'number' || GATEWAY_DECIDED.includes(counter)) continue;
      expect(dry.json[counter], counter).toBe(value);
    }
    expect(dry.json.gateway_charges).toBe(2);
    const answered = ['charged', 'pending', 'failed'].reduce((n, c) => n + real.json[c] - dry.json[c], 0);
    expect(answered, 'every charge the dry run left to the gateway was answered').toBe(dry.json.gateway_charges);

    const predicted = bySubscription(dry.json.actions);
    const happened = bySubscription(real.json.actions);
    expect([...predicted.keys()].sort()).toEqual([...happened.keys()].sort());
    for (const [id, actions] of happened) {
      const guess = predicted.get(id)!;
      const last = guess[guess.length - 1];
      if (last.awaits_gateway === null) {
        expect(guess, `subscription ${id}`).toEqual(actions);
        continue;
      }
      // Up to the charge, exact; the charge's answer and what follows it are the gateway's.
      expect(guess.slice(0, -1), `subscription ${id}`).toEqual(actions.slice(0, guess.length - 1));
      const { payment_status, status, awaits_gateway, ...rest } = last;
      expect(payment_status).toBeNull();
      expect(awaits_gateway).toContain("the gateway's answer");
      const { payment_status: realPayment, status: _status, awaits_gateway: none, ...realRest } = actions[guess.length - 1];
      expect(rest).toEqual(realRest);
      expect(none).toBeNull();
      expect(realPayment).not.toBeNull();
      // The dry run's status is the one before the answer (the real one is after it).
      expect(status).toBe('active');
    }

    // The mix did what it was built to do.
    const one = (id: string) => happened.get(id)!;
    expect(one(subs.wallet)).toEqual([expect.objectContaining({ action: 'renew', amount: '50000.00', status: 'active' })]);
    expect(one(subs.walletShort)).toEqual([expect.objectContaining({ action: 'renew', amount: '50000.00', status: 'past_due' })]);
    expect(one(subs.dunningShort)).toEqual([expect.objectContaining({ action: 'collect', amount: '50000.00', status: 'past_due' })]);
    expect(one(subs.dunningFunded)).toEqual([expect.objectContaining({ action: 'collect', amount: '50000.00', status: 'active' })]);
    expect(one(subs.leaving)).toEqual([expect.objectContaining({ action: 'cancel_at_period_end', status: 'canceled' })]);
    expect(one(subs.lastCycle)).toEqual([expect.objectContaining({ action: 'expire', status: 'expired' })]);
    expect(one(subs.trialEnded)).toEqual([expect.objectContaining({ action: 'renew', amount: '150000.00', status: 'active' })]);
    expect(one(subs.trialEnding)).toEqual([expect.objectContaining({ action: 'trial_notice', status: 'trialing' })]);
    expect(one(subs.daily).length).toBeGreaterThan(1);
    expect(one(subs.daily).every((a) => a.action === 'renew' && a.amount === '1000.00')).toBe(true);
    expect(one(subs.card)[0]).toMatchObject({ action: 'renew', payment_status: 'settled' });
    expect(one(subs.bank)[0]).toMatchObject({ action: 'renew', payment_status: 'pending' });
    expect(happened.has(subs.paused)).toBe(false);
    expect(real.json.card_notices).toBe(1);
    expect(real.json).toMatchObject({ expired: 1, trial_notices: 1, trial_ended: 1, canceled: 1, retried: 2 });

    // What the real run reported is what the database holds.
    const e = em();
    for (const a of real.json.actions as Action[]) {
      if (a.invoice_number === null) continue;
      const invoice = await e.findOneOrFail(Invoice, { number: a.invoice_number });
      expect(invoice.subscription?.id).toBe(a.subscription_id);
      expect(invoice.totalAmount).toBe(a.amount);
    }
    for (const [id, actions] of happened) expect((await e.findOneOrFail(Subscription, id)).status, id).toBe(actions[actions.length - 1].status);
  });

  it('webhooks replay: the dry run predicts each log\'s result, changes and error; the replay then does exactly that', async () => {
    const key = h.server.config.gateway.serverKey;
    const post = async (body: Record<string, unknown>) => (await h.server.api('POST', '/webhook/notification/', { body })).body.webhook_log_id as string;
    const unique = () => Math.random().toString(36).slice(2, 10).toUpperCase();

    // Succeeded, then sent again (a duplicate).
    const paid = await makeTopup(em(), { orderId: `TOPUP-OK${unique()}` });
    const settle = { order_id: paid.orderId, transaction_status: 'settlement', gross_amount: '100000.00' };
    const succeeded = await post(signedNotification(key, settle));
    const duplicate = await post(signedNotification(key, settle));
    // A bad signature.
    const badSignature = await post({ ...signedNotification(key, { order_id: `TOPUP-BAD${unique()}`, transaction_status: 'settlement', gross_amount: '5000.00' }), signature_key: 'f'.repeat(128) });
    // An order this service never made (still unknown at the replay).
    const unknown = await post(signedNotification(key, { order_id: `TOPUP-GONE${unique()}`, transaction_status: 'settlement', gross_amount: '50000.00' }));
    // Arrived before its top-up existed, twice: the replay processes the first, the second is its duplicate.
    const lateOrder = `TOPUP-LATE${unique()}`;
    const late = { order_id: lateOrder, transaction_status: 'settlement', gross_amount: '100000.00' };
    const lateIds = [await post(signedNotification(key, late)), await post(signedNotification(key, late))];
    // Failed on an amount that does not match: one fixed since (a restored row), one still wrong.
    const fixed = await makeTopup(em(), { orderId: `TOPUP-FIX${unique()}` });
    const fixedLog = await post(signedNotification(key, { order_id: fixed.orderId, transaction_status: 'settlement', gross_amount: '120000.00' }));
    const wrong = await makeTopup(em(), { orderId: `TOPUP-BAD${unique()}` });
    const wrongLog = await post(signedNotification(key, { order_id: wrong.orderId, transaction_status: 'settlement', gross_amount: '1.00' }));

    const ids = [succeeded, duplicate, badSignature, unknown, ...lateIds, fixedLog, wrongLog];
    const stored = new Map((await em().find(WebhookLog, { id: { $in: ids } })).map((l) => [l.id, l.status]));
    expect(ids.map((id) => stored.get(id))).toEqual(['processed', 'duplicate', 'invalid', 'ignored', 'ignored', 'ignored', 'failed', 'failed']);
    const lateTopup = await makeTopup(em(), { orderId: lateOrder });
    await em().nativeUpdate(Topup, { id: fixed.id }, { amount: '120000.00' });

    const before = await snapshot();
    const dry = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', ...ids, '--dry-run', '--json'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(await snapshot(), 'a dry run writes nothing').toEqual(before);
    const real = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', ...ids, '--json'], env);
    expect(real.json.dry_run).toBe(false);
    expect(dry.json.dry_run).toBe(true);

    const predicted = new Map<string, ReplayRow>(dry.json.results.map((r: ReplayRow) => [r.id, r]));
    const happened = new Map<string, ReplayRow>(real.json.results.map((r: ReplayRow) => [r.id, r]));
    expect(dry.json.results.map((r: ReplayRow) => r.id)).toEqual(real.json.results.map((r: ReplayRow) => r.id));
    for (const [id, r] of happened) {
      const p = predicted.get(id)!;
      expect({ result: p.result, changes: p.changes, error: p.error }, `log ${id}`).toEqual({ result: PREVIEW_OF[r.result] ?? r.result, changes: r.changes, error: r.error });
    }
    const result = (id: string) => happened.get(id)!.result;
    expect(ids.map(result)).toEqual(['skipped', 'skipped', 'invalid', 'ignored', 'processed', 'duplicate', 'processed', 'failed']);
    expect(happened.get(fixedLog)!.changes.length).toBeGreaterThan(0);

    // The database holds what the replay reported.
    const after = new Map((await em().find(WebhookLog, { id: { $in: ids } })).map((l) => [l.id, l.status]));
    for (const id of ids) expect(after.get(id), id).toBe(happened.get(id)!.webhook_log.status);
    expect((await em().findOneOrFail(Wallet, { user: lateTopup.user.id })).balance).toBe('100000.00');
    expect((await em().findOneOrFail(Wallet, { user: fixed.user.id })).balance).toBe('120000.00');
    expect((await em().findOneOrFail(Topup, wrong.id)).status).toBe('pending');
    // Unresolved logs remain: the real replay exits 1, the dry run 0.
    expect(real.code).toBe(1);
  });
});

/*
 * Issue 40, row 15: `payments sync --dry-run` said "would_process, 0 changed" and the real sync
 * then activated a subscription. The dry run now rehearses the sync and reports the real run's
 * changes, item for item.
 */
describe.each(DATABASES)('payments sync: the dry run against the real run (%s)', (kind) => {
  const stage = serverForCli(kind);
  const sync = (...args: string[]) => runCli(['payments', 'sync', ...args, '--json'], stage.env);
  // Notifications for these charges go nowhere: only a sync learns what happened.
  const LOST = 'http://127.0.0.1:9/lost';
  const charge = (orderId: string, amount: string) =>
    stage.server.running.billing.gateway.charge({ orderId, grossAmount: amount, currency: 'IDR', paymentType: 'bank_transfer', bank: 'bca', notificationUrl: LOST });
  const shape = (json: any) =>
    json.results
      .map((r: any) => ({ order_id: r.order_id, status_before: r.status_before, status_after: r.status_after, changes: r.changes }))
      .sort((a: any, b: any) => a.order_id.localeCompare(b.order_id));

  it('lists the subscriptions it would activate and the payments it would settle, exactly as the real run then changes them', async () => {
    const since = new Date();
    const paid = await makeSubscriptionWithPayment(stage.em());
    const waiting = await makeSubscriptionWithPayment(stage.em());
    const expired = await makeTopup(stage.em());
    await charge(paid.payment.orderId, '150000.00');
    await charge(waiting.payment.orderId, '150000.00');
    await charge(expired.orderId, '100000.00');
    await stage.server.running.billing.simulator!.act(paid.payment.orderId, 'settle');
    await stage.server.running.billing.simulator!.act(expired.orderId, 'expire');

    const dry = await sync('--since', since.toISOString(), '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    const predicted = dry.json.results.find((r: any) => r.order_id === paid.payment.orderId);
    expect(predicted).toMatchObject({ result: 'would_process', status_before: 'pending', status_after: 'settled', webhook_log: null });
    expect(predicted.changes).toContain('payment settled');
    expect(predicted.changes.some((c: string) => /activ/.test(c))).toBe(true);
    // Nothing happened.
    expect((await stage.em().findOneOrFail(Payment, paid.payment.id)).status).toBe('pending');
    expect((await stage.em().findOneOrFail(Subscription, paid.subscription.id)).status).toBe(paid.subscription.status);
    expect(await stage.em().count(WebhookLog, { source: 'sync' })).toBe(0);

    const real = await sync('--since', since.toISOString());
    expect(real.code, real.stderr).toBe(0);
    expect(shape(dry.json)).toEqual(shape(real.json));
    expect(real.json.changed).toBe(dry.json.changed);
    expect((await stage.em().findOneOrFail(Subscription, paid.subscription.id)).status).toBe('active');
  });
});
