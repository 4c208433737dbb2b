import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Notification } from '../../src/db/entities/notification.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Wallet, WalletTransaction } from '../../src/db/entities/wallet.js';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { makeSubscriptionWithPayment, makeTopup, signedNotification } from '../helpers/factories.js';

const LOG_FIELDS = ['id', 'order_id', 'transaction_status', 'payload', 'payload_sha256', 'payload_truncated', 'ip_address', 'status', 'error', 'attempts', 'source', 'processed_at', 'created_at'];

describe.each(DATABASES)('billing-admin webhooks on %s', (kind) => {
  const stage = serverForCli(kind);
  const em = stage.em;
  const cli = (args: string[], extraEnv: Record<string, string> = {}) => runCli([...args, '--json'], { ...stage.env, ...extraEnv });
  const post = (body: unknown) => stage.server.api('POST', '/webhook/notification/', { body });
  const sign = (fields: Parameters<typeof signedNotification>[1], key = stage.server.config.gateway.serverKey) => signedNotification(key, fields);
  const log = (id: string) => em().findOneOrFail(WebhookLog, id);
  const unique = () => Math.random().toString(36).slice(2, 10).toUpperCase();

  async function walletEntries(userId: string) {
    const wallet = await em().findOne(Wallet, { user: userId });
    return wallet ? { balance: wallet.balance, count: await em().count(WalletTransaction, { wallet }) } : { balance: null, count: 0 };
  }

  it('replays a notification ignored because its order was not there yet; a second replay changes nothing', async () => {
    const orderId = `TOPUP-LATE${unique()}`;
    const failed = await post(sign({ order_id: orderId, transaction_status: 'settlement', gross_amount: '100000.00' }));
    expect(failed.status).toBe(200);
    expect(failed.body.status).toBe('ignored');
    const id = failed.body.webhook_log_id as string;
    const topup = await makeTopup(em(), { orderId });

    const listed = await cli(['webhooks', 'list', '--status', 'ignored', '--order', orderId]);
    expect(listed.code).toBe(0);
    expect(listed.json).toHaveLength(1);
    expect(Object.keys(listed.json[0]).sort()).toEqual([...LOG_FIELDS].sort());
    expect(listed.json[0]).toMatchObject({ id, order_id: orderId, status: 'ignored', attempts: 1, source: 'gateway', ip_address: '127.0.0.1' });

    const dry = await cli(['webhooks', 'replay', '--reason', 'test: audited change', id, '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.json).toMatchObject({ dry_run: true, count: 1, results: [{ id, previous_status: 'ignored', result: 'would_process' }] });
    expect((await log(id)).status).toBe('ignored');
    expect((await walletEntries(topup.user.id)).count).toBe(0);

    const replayed = await cli(['webhooks', 'replay', '--reason', 'test: audited change', id]);
    expect(replayed.code).toBe(0);
    expect(replayed.json.results[0]).toMatchObject({ id, previous_status: 'ignored', result: 'processed', error: null });
    expect(replayed.json.results[0].webhook_log).toMatchObject({ id, status: 'processed', attempts: 2, source: 'gateway' });
    const stored = await log(id);
    expect(stored.status).toBe('processed');
    expect(stored.processedAt).not.toBeNull();
    expect(await walletEntries(topup.user.id)).toEqual({ balance: '100000.00', count: 1 });

    const again = await cli(['webhooks', 'replay', '--reason', 'test: audited change', id]);
    expect(again.code).toBe(0);
    expect(again.json.results[0]).toMatchObject({ result: 'skipped', previous_status: 'processed' });
    expect((await log(id)).attempts).toBe(2);
    expect(await walletEntries(topup.user.id)).toEqual({ balance: '100000.00', count: 1 });

    const byFilter = await cli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'failed,invalid,ignored', '--since', stored.createdAt.toISOString()]);
    expect(byFilter.json.results.map((r: { id: string }) => r.id)).not.toContain(id);
  });

  it('replays an invalid notification signed with a since-rotated key once the key is fixed', async () => {
    const oldKey = 'SB-Mid-server-ROTATED-AWAY';
    const { payment } = await makeSubscriptionWithPayment(em());
    const since = new Date();
    const res = await post(sign({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' }, oldKey));
    expect(res.status).toBe(403);
    const id = res.body.webhook_log_id as string;

    const stillWrong = await cli(['webhooks', 'replay', '--reason', 'test: audited change', id]);
    expect(stillWrong.code).toBe(1);
    expect(stillWrong.json.results[0]).toMatchObject({ result: 'invalid', webhook_log: { status: 'invalid', attempts: 2 } });
    expect((await em().findOneOrFail(Payment, payment.id)).status).toBe('pending');

    const fixed = await cli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'invalid', '--since', since.toISOString()], { GATEWAY_SERVER_KEY: oldKey });
    expect(fixed.code).toBe(0);
    const mine = fixed.json.results.find((r: { id: string }) => r.id === id);
    expect(mine).toMatchObject({ previous_status: 'invalid', result: 'processed', webhook_log: { status: 'processed', attempts: 3 } });
    const after = await em().findOneOrFail(Payment, payment.id, { populate: ['subscription'] });
    expect(after.status).toBe('settled');
    expect(after.subscription!.status).toBe('active');
  });

  it('an ignored notification that the gateway retry already processed becomes a duplicate when replayed', async () => {
    const { payment, user } = await makeSubscriptionWithPayment(em());
    const body = sign({ order_id: payment.orderId, transaction_status: 'settlement', gross_amount: '150000.00' });
    // The first delivery is ignored (the payment row is briefly out of reach), the gateway's retry succeeds.
    const orderId = payment.orderId;
    await em().nativeUpdate(Payment, { id: payment.id }, { orderId: `${orderId}-HIDDEN` });
    const first = await post(body);
    expect(first.body.status).toBe('ignored');
    await em().nativeUpdate(Payment, { id: payment.id }, { orderId });
    expect((await post(body)).body.status).toBe('ok');

    const replayed = await cli(['webhooks', 'replay', '--reason', 'test: audited change', first.body.webhook_log_id]);
    expect(replayed.code).toBe(0);
    expect(replayed.json.results[0]).toMatchObject({ result: 'duplicate', webhook_log: { status: 'duplicate' } });
    expect(replayed.json.results[0].error).toMatch(/Already processed as webhook log/);
    expect(await em().count(Notification, { user: user.id, notificationType: 'payment_succeeded' })).toBe(1);
    expect((await em().findOneOrFail(Payment, payment.id, { populate: ['subscription'] })).subscription!.cyclesCompleted).toBe(1);
  });

  it('replays a log left `received` by a crash between storing and processing', async () => {
    const topup = await makeTopup(em());
    const payload = JSON.stringify(sign({ order_id: topup.orderId, transaction_status: 'settlement', gross_amount: '100000.00' }));
    const stuck = em();
    const row = stuck.create(WebhookLog, { payload, orderId: topup.orderId, transactionStatus: 'settlement', status: 'received', source: 'gateway', attempts: 0, ipAddress: '127.0.0.1' } as WebhookLog);
    await stuck.flush();

    const listed = await cli(['webhooks', 'list', '--status', 'received']);
    expect(listed.json.map((l: { id: string }) => l.id)).toContain(row.id);
    const replayed = await cli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'received']);
    expect(replayed.code).toBe(0);
    expect(replayed.json.results.find((r: { id: string }) => r.id === row.id)).toMatchObject({ result: 'processed' });
    expect(await walletEntries(topup.user.id)).toEqual({ balance: '100000.00', count: 1 });
  });

  it('show prints one log with its raw payload; unknown ids exit 4', async () => {
    const res = await post({ hello: 'world' });
    expect(res.status).toBe(400);
    const id = /webhook log ([0-9a-f-]{36})/.exec(res.body.detail)![1];
    const shown = await cli(['webhooks', 'show', id]);
    expect(shown.code).toBe(0);
    expect(shown.json).toMatchObject({ id, status: 'invalid', payload: '{"hello":"world"}', order_id: null, source: 'gateway' });
    expect(shown.json.error).toMatch(/order_id/);

    const human = await runCli(['webhooks', 'show', id], stage.env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/"hello": "world"/);

    expect((await cli(['webhooks', 'show', '00000000-0000-4000-8000-000000000000'])).code).toBe(4);
    expect((await cli(['webhooks', 'show', 'not-a-uuid'])).code).toBe(4);
  });

  it('list filters by time window and prints a table by default; bad options exit 2', async () => {
    const before = new Date();
    const topup = await makeTopup(em());
    await post(sign({ order_id: topup.orderId, transaction_status: 'pending', gross_amount: '100000.00' }));
    const inWindow = await cli(['webhooks', 'list', '--since', before.toISOString(), '--order', topup.orderId]);
    expect(inWindow.json.map((l: { status: string }) => l.status)).toEqual(['processed']);
    const outOfWindow = await cli(['webhooks', 'list', '--until', before.toISOString(), '--order', topup.orderId]);
    expect(outOfWindow.json).toEqual([]);

    const table = await runCli(['webhooks', 'list', '--order', topup.orderId], stage.env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/id\s+created_at\s+source\s+status/);
    expect(table.stdout).toContain(topup.orderId);

    expect((await cli(['webhooks', 'list', '--status', 'bogus'])).code).toBe(2);
    expect((await cli(['webhooks', 'list', '--since', 'yesterday'])).code).toBe(2);
    expect((await cli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'processed'])).code).toBe(2);
  });

  it("show --json gives an invalid notification's excerpt, that it is one, and the SHA-256 of the whole body", async () => {
    const body = JSON.stringify({ order_id: 'SUB-FORGED-SHOW', transaction_status: 'settlement', status_code: '200', gross_amount: '1.00', signature_key: 'bad', padding: 'x'.repeat(10_000) });
    const res = await stage.server.api('POST', '/webhook/notification/', { rawBody: body, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(403);
    const shown = await cli(['webhooks', 'show', res.body.webhook_log_id]);
    expect(shown.code).toBe(0);
    expect(shown.json).toMatchObject({ status: 'invalid', payload_truncated: true, payload_sha256: createHash('sha256').update(body).digest('hex') });
    expect(shown.json.payload).toBe(body.slice(0, 4096));
  });
});
