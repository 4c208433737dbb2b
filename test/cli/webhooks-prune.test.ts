import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog, type WebhookLogStatus } from '../../src/db/entities/webhook-log.js';
import { systemClock } from '../../src/domain/clock.js';
import { pruneWebhookLogs } from '../../src/services/gateway-events/prune-webhook-logs.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';

const DAY = 86_400_000;
const ALL_STATUSES: WebhookLogStatus[] = ['received', 'invalid', 'duplicate', 'processed', 'failed', 'ignored'];

describe.each(DATABASES)('billing-admin webhooks prune on %s', (kind) => {
  const stage = serverForCli(kind);
  const em = stage.em;
  const cli = (args: string[]) => runCli(args, stage.env);

  /** One log per status, created `ageDays` ago, tagged so that each test reads only its own. */
  async function logsAged(ageDays: number, tag: string): Promise<Map<WebhookLogStatus, string>> {
    const ids = new Map<WebhookLogStatus, string>();
    const at = new Date(Date.now() - ageDays * DAY);
    for (const status of ALL_STATUSES) {
      const log = Object.assign(new WebhookLog(), {
        id: randomUUID(),
        orderId: `${tag}-${status}`,
        transactionStatus: 'settlement',
        payload: '{}',
        status,
        source: 'gateway',
        attempts: 1,
        createdAt: at,
        updatedAt: at,
      });
      await em().insert(WebhookLog, log);
      ids.set(status, log.id);
    }
    return ids;
  }
  const remaining = async (tag: string) =>
    (await em().find(WebhookLog, { orderId: { $like: `${tag}-%` } }, { orderBy: { createdAt: 'asc' } })).map((l) => `${l.status}@${l.orderId}`);

  it('deletes final logs older than the age, keeps failed and received ones and recent ones; --dry-run deletes nothing', async () => {
    const tag = `PRUNE${Date.now()}`;
    await logsAged(100, `${tag}-old`);
    await logsAged(10, `${tag}-new`);

    const dry = await cli(['webhooks', 'prune', '--reason', 'test: audited change', '--older-than', '90d', '--dry-run', '--json']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.json).toMatchObject({ dry_run: true, count: 4, statuses: ['processed', 'duplicate', 'invalid', 'ignored'] });
    expect(Date.now() - Date.parse(dry.json.before)).toBeGreaterThanOrEqual(90 * DAY);
    expect(await remaining(tag)).toHaveLength(12);

    const run = await cli(['webhooks', 'prune', '--reason', 'test: audited change', '--older-than', '90d', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ dry_run: false, count: 4 });
    const left = await remaining(tag);
    expect(left.filter((l) => l.includes('-old-')).sort()).toEqual([`failed@${tag}-old-failed`, `received@${tag}-old-received`]);
    expect(left.filter((l) => l.includes('-new-'))).toHaveLength(6);

    // Nothing left to prune: 0, still success; hours work as a unit too.
    const again = await cli(['webhooks', 'prune', '--reason', 'test: audited change', '--older-than', '2160h']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/Deleted 0 webhook logs/);
    expect(await remaining(tag)).toHaveLength(8);
  });

  it.each(['90', '90x', '0d', '-5d', '1.5d'])('refuses --older-than %j with exit 2 and deletes nothing', async (age) => {
    const tag = `PRUNEBAD${Date.now()}`;
    await logsAged(400, tag);
    const res = await cli(['webhooks', 'prune', '--reason', 'test: audited change', '--older-than', age, '--json']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/older-than/);
    expect(await remaining(tag)).toHaveLength(6);
  });

  it('without --older-than it refuses (no default age)', async () => {
    const res = await cli(['webhooks', 'prune', '--reason', 'test: audited change']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/--older-than/);
  });

  it('deletes in batches until none is left, each batch re-checking status and age', async () => {
    const tag = `PRUNEBATCH${Date.now()}`;
    for (let i = 0; i < 3; i++) await logsAged(200, `${tag}-${i}`);
    const seen: number[] = [];
    const ctx = { em: em(), config: stage.server.config, clock: systemClock };
    const result = await pruneWebhookLogs(ctx, { olderThanMs: 150 * DAY, batchSize: 5 }, (n) => seen.push(n));
    // 3 × 4 prunable logs of this test, plus whatever older ones earlier tests left (none: they were pruned or are failed/received).
    expect(result.count).toBeGreaterThanOrEqual(12);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.at(-1)).toBe(result.count);
    expect((await remaining(tag)).every((l) => l.startsWith('failed@') || l.startsWith('received@'))).toBe(true);
    expect(await remaining(tag)).toHaveLength(6);
  });

  it('a notification resent after its processed log was pruned changes nothing (the domain guards hold without the deduplication key)', async () => {
    const ctx = { em: em(), config: stage.server.config, clock: systemClock };
    const key = stage.server.config.gateway.serverKey;
    const post = (body: unknown) => stage.server.api('POST', '/webhook/notification/', { body });
    const topup = await makeTopup(em());
    const { payment, user } = await makeSubscriptionWithPayment(em());
    const topupSettled = signedNotification(key, { order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' });
    const paymentSettled = signedNotification(key, { order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
    const first = [await post(topupSettled), await post(paymentSettled)];
    expect(first.map((r) => r.body.status)).toEqual(['ok', 'ok']);
    const state = async () => {
      const wallet = await em().findOne(Wallet, { user: topup.user.id });
      const paid = await em().findOneOrFail(Payment, { orderId: payment.orderId }, { populate: ['subscription', 'invoice'] });
      return {
        balance: wallet?.balance,
        ledger: wallet ? await em().count(WalletTransaction, { wallet }) : 0,
        cycles: paid.subscription!.cyclesCompleted,
        periodEnd: paid.subscription!.currentPeriodEnd?.toISOString(),
        invoice: paid.invoice!.status,
        notifications: await em().count(Notification, { user: user.id }),
      };
    };
    const before = await state();

    const long = new Date(Date.now() - 100 * DAY);
    await em().nativeUpdate(WebhookLog, { id: { $in: first.map((r) => r.body.webhook_log_id) } }, { createdAt: long });
    await pruneWebhookLogs(ctx, { olderThanMs: 90 * DAY });
    expect(await em().count(WebhookLog, { id: { $in: first.map((r) => r.body.webhook_log_id) } })).toBe(0);

    const again = [await post(topupSettled), await post(paymentSettled)];
    expect(again.map((r) => r.status)).toEqual([200, 200]);
    expect(await state()).toEqual(before);
  });
});
