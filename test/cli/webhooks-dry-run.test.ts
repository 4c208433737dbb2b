import { describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';

/*
 * `webhooks replay --dry-run` must say what the real replay then does, log for log: it runs the
 * same processing in a transaction it rolls back, so an order that is still missing, an amount
 * that does not match and a second copy of the same notification are all predicted right.
 */

const PREVIEW_OF: Record<string, string> = { processed: 'would_process', failed: 'would_fail' };

describe.each(DATABASES)('webhooks replay --dry-run against the real replay on %s', (kind) => {
  const stage = serverForCli(kind);
  const em = stage.em;
  const post = (fields: Parameters<typeof signedNotification>[1]) =>
    stage.server.api('POST', '/webhook/notification/', { body: signedNotification(stage.server.config.gateway.serverKey, fields) });
  const unique = () => Math.random().toString(36).slice(2, 10).toUpperCase();

  async function snapshot() {
    const e = em();
    const logs = await e.find(WebhookLog, {}, { orderBy: { id: 'asc' } });
    return {
      logs: logs.map((l) => [l.id, l.status, l.attempts, l.dedupKey]),
      wallets: (await e.find(Wallet, {}, { orderBy: { id: 'asc' } })).map((w) => [w.id, w.balance]),
      ledger: await e.count(WalletTransaction, {}),
      notifications: await e.count(Notification, {}),
    };
  }

  it('predicts processed, still failed and duplicate exactly as the replay then does, and writes nothing', async () => {
    const since = new Date(Date.now() - 1000);
    // 1. Arrived before its top-up existed, twice (the gateway retried): the first replay
    //    processes it and the second copy becomes a duplicate of it.
    const lateOrder = `TOPUP-LATE${unique()}`;
    const late = { order_id: lateOrder, transaction_status: 'settlement', gross_amount: '100000.00' };
    const lateIds = [(await post(late)).body.webhook_log_id, (await post(late)).body.webhook_log_id];
    // 2. An order that still does not exist: it stays failed.
    const missing = (await post({ order_id: `TOPUP-GONE${unique()}`, transaction_status: 'settlement', gross_amount: '50000.00' })).body.webhook_log_id;
    // 3. An amount that does not match the payment: it stays failed.
    const { payment } = await makeSubscriptionWithPayment(em());
    const mismatch = (await post({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '1.00' })).body.webhook_log_id;
    const ids = [...lateIds, missing, mismatch];
    const stored = new Map((await em().find(WebhookLog, { id: { $in: ids } })).map((l) => [l.id, l.status]));
    // Orders this service does not know are ignored (a merchant account can be shared), and stay replayable.
    expect(ids.map((id) => stored.get(id))).toEqual(['ignored', 'ignored', 'ignored', 'failed']);

    const topup = await makeTopup(em(), { orderId: lateOrder });
    const before = await snapshot();

    const dry = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'failed,ignored', '--since', since.toISOString(), '--dry-run', '--json'], stage.env);
    expect(dry.code).toBe(0);
    expect(dry.json.dry_run).toBe(true);
    expect(await snapshot()).toEqual(before);

    const real = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'failed,ignored', '--since', since.toISOString(), '--json'], stage.env);
    expect(real.json.dry_run).toBe(false);

    const predicted = new Map<string, string>(dry.json.results.map((r: { id: string; result: string }) => [r.id, r.result]));
    const happened = new Map<string, string>(real.json.results.map((r: { id: string; result: string }) => [r.id, r.result]));
    expect([...predicted.keys()].sort()).toEqual([...happened.keys()].sort());
    for (const [id, result] of happened) expect(predicted.get(id), `log ${id}`).toBe(PREVIEW_OF[result] ?? result);

    expect(happened.get(lateIds[0])).toBe('processed');
    expect(happened.get(lateIds[1])).toBe('duplicate');
    expect(happened.get(missing)).toBe('ignored');
    expect(happened.get(mismatch)).toBe('failed');
    // The dry run also says what the effects would be, and why the failures would fail.
    const dryFirst = dry.json.results.find((r: { id: string }) => r.id === lateIds[0]);
    expect(dryFirst.changes).toEqual(real.json.results.find((r: { id: string }) => r.id === lateIds[0]).changes);
    expect(dry.json.results.find((r: { id: string }) => r.id === mismatch).error).toBeTruthy();
    // The real replay credited the wallet once.
    const wallet = await em().findOneOrFail(Wallet, { user: topup.user.id });
    expect(wallet.balance).toBe('100000.00');
  });
});
