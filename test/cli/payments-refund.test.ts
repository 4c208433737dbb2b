import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, walletBalance } from '../helpers/subscriptions.js';

describe.each(DATABASES)('billing-admin payments refund on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const cli = (...args: string[]) => runCli(['payments', 'refund', ...args], { DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test' });
  const getSub = async (user: { username: string; password: string }, id: string) =>
    (await server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;

  it('--keep-subscription refunds part and leaves the subscription running; then the rest ends it (cancel_reason refunded)', async () => {
    const user = await server.createUser();
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly');

    const first = await cli(payment.order_id, '--amount', '20000', '--reason', 'goodwill', '--keep-subscription', '--json');
    expect(first.code).toBe(0);
    expect(first.json).toMatchObject({
      payment: { order_id: payment.order_id, status: 'partially_refunded', refunded_amount: '20000.00', credited_amount: '0.00' },
      refund: { amount: '20000.00', destination: 'wallet', status: 'succeeded' },
    });
    expect(await getSub(user, subscription.id)).toMatchObject({ status: 'active' });
    // Issue 40, row 15: the staff API's refund answer, field for field (AdminRefund, the payment with its owner).
    expect(first.json.refund).toMatchObject({ id: expect.any(String), payment_id: payment.id, order_id: payment.order_id, description: null, created_at: expect.any(String), user: { id: user.id, username: user.username } });
    expect(first.json.payment.user).toEqual({ id: user.id, username: user.username });

    const rest = await cli(payment.order_id, '--reason', 'customer left', '--json');
    expect(rest.code).toBe(0);
    expect(rest.json).toMatchObject({ payment: { status: 'refunded', refunded_amount: '50000.00' }, refund: { amount: '30000.00' } });
    expect(await getSub(user, subscription.id)).toMatchObject({ status: 'canceled', cancel_reason: 'refunded' });
    expect(await walletBalance(server, user)).toBe('50000.00');

    // Nothing is left: a conflict, and nothing written.
    const again = await cli(payment.order_id, '--reason', 'twice');
    expect(again.code).toBe(3);
    expect(await walletBalance(server, user)).toBe('50000.00');
  });

  it('says what became of the subscription: kept with --keep-subscription, canceled (refunded) with the time otherwise (issue 30)', async () => {
    const user = await server.createUser();
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly');
    const kept = await cli(payment.order_id, '--amount', '10000', '--reason', 'goodwill', '--keep-subscription');
    expect(kept.code, kept.stderr).toBe(0);
    expect(kept.stdout).toContain(`Subscription ${subscription.id} is kept: active until`);
    const ended = await cli(payment.order_id, '--reason', 'customer left', '--json');
    expect(ended.json.subscription).toMatchObject({ id: subscription.id, status: 'canceled', cancel_reason: 'refunded' });
    const canceledAt = ended.json.subscription.canceled_at;
    expect(canceledAt).toEqual(expect.any(String));
    expect((await getSub(user, subscription.id)).canceled_at).toBe(canceledAt);
  });

  it('bounded by what is refundable: more is a usage error; an unknown order is not found; --reason is required', async () => {
    const user = await server.createUser();
    const { payment } = await activeSubscription(server, user, 'basic-monthly');
    expect((await cli(payment.order_id, '--amount', '50001', '--reason', 'too much')).code).toBe(2);
    expect((await cli('SUB-NO-SUCH-ORDER', '--reason', 'x')).code).toBe(4);
    expect((await cli(payment.order_id)).code).not.toBe(0);
    expect(await walletBalance(server, user)).toBe('0.00');
  });
});
