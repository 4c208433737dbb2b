import { beforeAll, describe, expect, it } from 'vitest';
import { Payment, Refund } from '../../src/db/entities/payment.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { runCli } from '../helpers/cli.js';
import { signedNotification } from '../helpers/factories.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS } from '../helpers/server.js';
import { heldNotifications, holdNotifications, releaseNotifications } from '../helpers/simulator.js';
import { simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup, walletBalance } from '../helpers/topups.js';

/*
 * Issue 37, the gateway's facts in any order (docs/gateway.md, "Chargebacks" and "Facts out of
 * order"). Each test replays a row of the issue against the real server, the simulator acting as
 * Midtrans and its notification proxy holding notifications to deliver them newest first:
 *
 *   1  a partial_chargeback with a free-text reason was recorded as a refund too;
 *   4  after a chargeback the saved card was charged again;
 *   12 a Permata VA or Mandiri bill settled, then reversed, heard newest first, ended settled
 *      with access (and payments sync said "unchanged" for ever);
 *   13 the same with a top-up or a plan change's payment: the wallet kept the money;
 *   14 a partial and a full chargeback heard newest first, or found by payments sync: one
 *      notice and no credit note;
 *   15 a lost settlement, its reversal heard: `failed`, not `reversed`;
 *   16 paying again while the first order's settlement was unheard, the cancel refused: charged twice.
 *
 * Where it can, a test plays the same facts in their natural order on a twin and compares: order
 * never decides the end state.
 */
describe.each(DATABASES)('gateway facts in any order (%s)', (kind) => {
  const stage = serverForCli(kind);
  beforeAll(() => stage.server.seedPlans(STANDARD_PLANS));
  const api = (method: string, path: string, user: TestUser, body?: unknown) => stage.server.api(method, path, { auth: user, body });
  const sync = () => runCli(['payments', 'sync', '--json'], stage.env);
  const paymentOf = async (user: TestUser, id: string) => (await api('GET', `/payments/${id}/`, user)).body;
  const inApp = async (user: TestUser) =>
    ((await api('GET', '/notifications/?channel=in_app&page_size=100', user)).body.results as { notification_type: string; data: Record<string, unknown> }[]);
  const notices = async (user: TestUser, type: string) => (await inApp(user)).filter((n) => n.notification_type === type).map((n) => n.data);
  const creditNotes = async (user: TestUser) =>
    ((await api('GET', '/credit-notes/', user)).body.results as { reason: string; amount: string }[]).map((n) => [n.reason, n.amount]);

  /** What a customer and finance see of one subscription payment, to compare arrival orders. */
  const books = async (user: TestUser, payment: { id: string; invoice_id: string }, subscriptionId: string) => {
    const p = await paymentOf(user, payment.id);
    return {
      payment: { status: p.status, refunded_amount: p.refunded_amount, chargeback_amount: p.chargeback_amount, credited_amount: p.credited_amount },
      invoice: (await api('GET', `/invoices/${payment.invoice_id}/`, user)).body.status,
      subscription: (await api('GET', `/subscriptions/${subscriptionId}/`, user)).body.status,
      access: (await api('GET', '/subscriptions/active/', user)).status,
      wallet: await walletBalance(stage.server, user),
      creditNotes: (await creditNotes(user)).sort(),
      notices: (await inApp(user)).map((n) => n.notification_type).sort(),
    };
  };

  /**
   * Holds the order's notifications, makes the moves at the gateway, then delivers what was held
   * in `order` (the charge's own `pending`, when it had not left yet, among them); every one is
   * answered 200. Returns the statuses delivered, `pending` left out.
   */
  const replay = async (orderId: string, moves: { action: string; body?: unknown }[], order: 'newest_first' | 'oldest_first') => {
    await holdNotifications(stage.server, orderId);
    for (const m of moves) await simulate(stage.server, orderId, m.action, m.body);
    const released = await releaseNotifications(stage.server, { order_id: orderId, order });
    expect(released.map((r) => r.outcomes.map((o) => o.http_status))).toEqual(released.map(() => [200]));
    const statuses = released.map((r) => r.transaction_status).filter((st) => st !== 'pending');
    expect(statuses).toHaveLength(moves.length);
    return statuses;
  };

  const paidByCard = async (plan = 'basic-monthly') => {
    const user: TestUser = await stage.server.createUser();
    const created = await subscribe(stage.server, user, { plan_id: plan, payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(created.status, created.text).toBe(201);
    await simulate(stage.server, created.body.payment.order_id, 'settle');
    expect((await paymentOf(user, created.body.payment.id)).status).toBe('settled');
    return { user, payment: created.body.payment, subscription: created.body.subscription };
  };

  const pendingBy = async (how: Record<string, unknown>, plan = 'basic-monthly') => {
    const user: TestUser = await stage.server.createUser();
    const created = await subscribe(stage.server, user, { plan_id: plan, ...how });
    expect(created.status, created.text).toBe(201);
    return { user, payment: created.body.payment, subscription: created.body.subscription };
  };

  it('row 1: a partial_chargeback whose refunds[] entry has a free-text reason and a refund_chargeback_id is a chargeback only: no refund, no status change', async () => {
    const { user, payment, subscription } = await paidByCard('pro-monthly');
    const res = await stage.server.request('POST', `/_simulator/v2/${payment.order_id}/partial_chargeback`, { body: { amount: 50000, reason: 'Cardholder disputes the transaction' } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.notification.http_status).toBe(200);
    // What the webhook received is what Midtrans writes: a free-text reason, a refund_chargeback_id, no word "chargeback" in the entry.
    const sent = stage.server.running.billing.simulator!.deliveries().filter((d) => d.order_id === payment.order_id && d.transaction_status === 'partial_chargeback');
    expect(sent.at(-1)!.payload).toMatchObject({ refund_amount: '50000.00', refunds: [{ refund_chargeback_id: 1, refund_amount: '50000.00', reason: 'Cardholder disputes the transaction' }] });

    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'settled', refunded_amount: '0.00', chargeback_amount: '50000.00' });
    expect(await stage.em().count(Refund, { payment: payment.id })).toBe(0);
    expect(await creditNotes(user)).toEqual([['chargeback', '50000.00']]);
    expect(await notices(user, 'payment_refunded')).toEqual([]);
    expect(await notices(user, 'payment_charged_back')).toEqual([expect.objectContaining({ chargeback_amount: '50000.00', fully_charged_back: false })]);
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('active');

    // The rest, with another free-text reason: charged back in full, still no refund anywhere.
    await simulate(stage.server, payment.order_id, 'chargeback', { reason: 'Fraudulent transaction (issuer)' });
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'charged_back', refunded_amount: '0.00', chargeback_amount: '150000.00' });
    expect(await stage.em().count(Refund, { payment: payment.id })).toBe(0);
    expect(await creditNotes(user)).toEqual([['chargeback', '50000.00']]);
  });

  it('row 4: a chargeback forgets the saved card and tells the customer; the card is not charged again, a new one pays', async () => {
    const { user, payment, subscription } = await paidByCard();
    expect((await stage.em().findOneOrFail(Subscription, subscription.id)).cardToken).not.toBeNull();
    await simulate(stage.server, payment.order_id, 'chargeback', { reason: 'Cardholder does not recognise the transaction' });

    expect((await stage.em().findOneOrFail(Subscription, subscription.id)).cardToken).toBeNull();
    expect(await notices(user, 'payment_method_required')).toEqual([expect.objectContaining({ subscription_id: subscription.id, order_id: payment.order_id, reason: 'chargeback' })]);
    const chargesBefore = stage.server.running.billing.simulator!.requests().filter((r) => r.operation === 'charge').length;
    const refused = await api('POST', '/payments/charge/', user, { subscription_id: subscription.id });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.body.detail).toContain('no saved card');
    expect(stage.server.running.billing.simulator!.requests().filter((r) => r.operation === 'charge').length).toBe(chargesBefore);

    const repaid = await api('POST', '/payments/charge/', user, { subscription_id: subscription.id, token: 'sim-card-accept-2' });
    expect(repaid.status, repaid.text).toBe(201);
    await simulate(stage.server, repaid.body.payment.order_id, 'settle');
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('active');
  });

  it('row 4: a partial chargeback forgets the card too (the dispute is about that card)', async () => {
    const { user, payment, subscription } = await paidByCard('pro-monthly');
    await simulate(stage.server, payment.order_id, 'partial_chargeback', { amount: 10000 });
    expect((await stage.em().findOneOrFail(Subscription, subscription.id)).cardToken).toBeNull();
    expect(await notices(user, 'payment_method_required')).toHaveLength(1);
  });

  for (const [name, how] of [
    ['a Permata VA', { payment_type: 'bank_transfer', metadata: { bank: 'permata' } }],
    ['a Mandiri bill', { payment_type: 'echannel' }],
  ] as const) {
    it(`row 12: ${name} settled then reversed, heard newest first, ends reversed as in natural order; payments sync agrees`, async () => {
      const twin = await pendingBy(how);
      await replay(twin.payment.order_id, [{ action: 'settle' }, { action: 'deny' }], 'oldest_first');
      const natural = await books(twin.user, twin.payment, twin.subscription.id);
      expect(natural).toMatchObject({ payment: { status: 'reversed' }, invoice: 'open', subscription: 'past_due', access: 404 });

      const { user, payment, subscription } = await pendingBy(how);
      expect(await replay(payment.order_id, [{ action: 'settle' }, { action: 'deny' }], 'newest_first')).toEqual(['deny', 'settlement']);
      expect(await books(user, payment, subscription.id)).toEqual(natural);

      const first = await sync();
      expect(first.code, first.stderr).toBe(0);
      const item = first.json.results.find((r: { order_id: string }) => r.order_id === payment.order_id);
      // Reversed is final: not asked again, or asked and unchanged.
      if (item) expect(item.result).toBe('unchanged');
      expect(await books(user, payment, subscription.id)).toEqual(natural);
    });
  }

  it('row 12: a settlement and its reversal both lost: payments sync applies them as settled-then-reversed, once', async () => {
    const { user, payment, subscription } = await pendingBy({ payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    await simulate(stage.server, payment.order_id, 'settle?notify=false');
    await simulate(stage.server, payment.order_id, 'deny?notify=false');
    const first = await sync();
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.results.find((r: { order_id: string }) => r.order_id === payment.order_id)).toMatchObject({
      gateway_status: 'deny',
      status_before: 'pending',
      status_after: 'reversed',
      result: 'processed',
    });
    const after = await books(user, payment, subscription.id);
    expect(after).toMatchObject({ payment: { status: 'reversed' }, invoice: 'open', subscription: 'past_due', access: 404 });
    expect(after.notices).toEqual(expect.arrayContaining(['payment_succeeded', 'payment_reversed', 'subscription_past_due']));
    const second = await sync();
    expect(second.json.results.find((r: { order_id: string; result: string }) => r.order_id === payment.order_id && r.result === 'processed')).toBeUndefined();
    expect(await books(user, payment, subscription.id)).toEqual(after);
  });

  it('row 12: a deny first applied as a plain failure (it carried no settlement_time) never hides the reversal: the late settlement, then payments sync, end reversed', async () => {
    const { user, payment, subscription } = await pendingBy({ payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
    await holdNotifications(stage.server, payment.order_id);
    await simulate(stage.server, payment.order_id, 'settle');
    await simulate(stage.server, payment.order_id, 'deny');
    // The gateway's own notifications are lost; a deny without evidence of the settlement arrives, then the settlement.
    await releaseNotifications(stage.server, { order_id: payment.order_id, drop: true });
    const key = stage.server.config.gateway.serverKey;
    const bare = { order_id: payment.order_id, gross_amount: '50000.00', payment_type: 'bank_transfer', permata_va_number: '8562000000000001', fraud_status: 'accept' };
    expect((await stage.server.api('POST', '/webhook/notification/', { body: signedNotification(key, { ...bare, transaction_status: 'deny' }) })).status).toBe(200);
    expect((await paymentOf(user, payment.id)).status).toBe('failed');
    const settled = signedNotification(key, { ...bare, transaction_status: 'settlement', settlement_time: '2026-01-15 10:15:00' });
    expect((await stage.server.api('POST', '/webhook/notification/', { body: settled })).status).toBe(200);
    expect((await paymentOf(user, payment.id)).status).toBe('settled');

    const found = await sync();
    expect(found.code, found.stderr).toBe(0);
    expect(found.json.results.find((r: { order_id: string }) => r.order_id === payment.order_id)).toMatchObject({ gateway_status: 'deny', status_before: 'settled', status_after: 'reversed', result: 'processed' });
    expect(await books(user, payment, subscription.id)).toMatchObject({ payment: { status: 'reversed' }, invoice: 'open', subscription: 'past_due', access: 404, wallet: '0.00' });
  });

  it('row 15: a settlement lost, its reversal delivered: the payment is reversed, not failed', async () => {
    const { user, payment, subscription } = await pendingBy({ payment_type: 'echannel' });
    await simulate(stage.server, payment.order_id, 'settle?notify=false');
    const denied = await simulate(stage.server, payment.order_id, 'deny');
    expect(denied.body.notification.http_status).toBe(200);
    expect(await books(user, payment, subscription.id)).toMatchObject({ payment: { status: 'reversed' }, invoice: 'open', subscription: 'past_due', access: 404 });
    // The settlement's notification, delivered late after all (as Midtrans wrote it), buys nothing.
    const late = signedNotification(stage.server.config.gateway.serverKey, {
      order_id: payment.order_id,
      transaction_status: 'settlement',
      gross_amount: '50000.00',
      payment_type: 'echannel',
      fraud_status: 'accept',
      settlement_time: '2026-01-15 10:15:00',
    });
    expect((await stage.server.api('POST', '/webhook/notification/', { body: late })).status).toBe(200);
    expect(await books(user, payment, subscription.id)).toMatchObject({ payment: { status: 'reversed' }, invoice: 'open', subscription: 'past_due', access: 404 });
  });

  it('row 13: a Permata top-up settled then reversed, heard newest first: the wallet keeps nothing, as in natural order', async () => {
    const top = async (order: 'newest_first' | 'oldest_first') => {
      const user: TestUser = await stage.server.createUser();
      const topup = await postTopup(stage.server, user, { amount: 100000, payment_type: 'bank_transfer', bank: 'permata' });
      expect(topup.status, topup.text).toBe(201);
      await replay(topup.body.order_id, [{ action: 'settle' }, { action: 'deny' }], order);
      const t = (await api('GET', `/topups/${topup.body.id}/`, user)).body;
      return { status: t.status, wallet: await walletBalance(stage.server, user), notices: (await inApp(user)).map((n) => n.notification_type).sort() };
    };
    const natural = await top('oldest_first');
    expect(natural).toMatchObject({ status: 'reversed', wallet: '0.00' });
    expect(await top('newest_first')).toEqual(natural);
  });

  it("row 13: a plan change's payment by Permata VA settled then reversed, heard newest first: the wallet keeps nothing, as in natural order", async () => {
    const change = async (order: 'newest_first' | 'oldest_first') => {
      const { user, payment, subscription } = await pendingBy({ payment_type: 'bank_transfer', metadata: { bank: 'permata' } });
      await simulate(stage.server, payment.order_id, 'settle');
      const res = await api('POST', `/subscriptions/${subscription.id}/change-plan/`, user, { plan_id: 'pro-monthly', immediate: true });
      expect(res.status, res.text).toBe(200);
      const proration = res.body.payment;
      expect(proration).toMatchObject({ status: 'pending', payment_type: 'bank_transfer' });
      await replay(proration.order_id, [{ action: 'settle' }, { action: 'deny' }], order);
      const sub = (await api('GET', `/subscriptions/${subscription.id}/`, user)).body;
      return { ...(await books(user, proration, subscription.id)), plan: sub.plan.slug, pending_change: sub.pending_change === null };
    };
    const natural = await change('oldest_first');
    expect(natural).toMatchObject({ payment: { status: 'reversed' }, wallet: '0.00' });
    expect(await change('newest_first')).toEqual(natural);
  });

  it('row 14: a partial and a full chargeback heard newest first end as in natural order: the credit note and both notices', async () => {
    const moves = [{ action: 'partial_chargeback', body: { amount: 20000 } }, { action: 'chargeback' }];
    const twin = await paidByCard();
    await replay(twin.payment.order_id, moves, 'oldest_first');
    const natural = await books(twin.user, twin.payment, twin.subscription.id);
    expect(natural).toMatchObject({ payment: { status: 'charged_back', chargeback_amount: '50000.00', refunded_amount: '0.00' }, creditNotes: [['chargeback', '20000.00']] });
    expect(natural.notices.filter((n) => n === 'payment_charged_back')).toHaveLength(2);

    const { user, payment, subscription } = await paidByCard();
    expect(await replay(payment.order_id, moves, 'newest_first')).toEqual(['chargeback', 'partial_chargeback']);
    expect(await books(user, payment, subscription.id)).toEqual(natural);
    expect((await notices(user, 'payment_charged_back')).map((d) => [d.chargeback_amount, d.fully_charged_back]).sort()).toEqual([
      ['20000.00', false],
      ['50000.00', true],
    ]);
  });

  it('row 14: a partial and a full chargeback found only by payments sync: the credit note and both notices, once', async () => {
    const twin = await paidByCard();
    await simulate(stage.server, twin.payment.order_id, 'partial_chargeback', { amount: 20000 });
    await simulate(stage.server, twin.payment.order_id, 'chargeback');
    const natural = await books(twin.user, twin.payment, twin.subscription.id);

    const { user, payment, subscription } = await paidByCard();
    expect((await sync()).code).toBe(0);
    await simulate(stage.server, payment.order_id, 'partial_chargeback?notify=false', { amount: 20000 });
    await simulate(stage.server, payment.order_id, 'chargeback?notify=false');
    const first = await sync();
    expect(first.code, first.stderr).toBe(0);
    expect(first.json.results.find((r: { order_id: string }) => r.order_id === payment.order_id)).toMatchObject({ gateway_status: 'chargeback', status_after: 'charged_back', result: 'processed' });
    expect(await books(user, payment, subscription.id)).toEqual(natural);
    expect((await sync()).json.results.find((r: { order_id: string; result: string }) => r.order_id === payment.order_id && r.result === 'processed')).toBeUndefined();
    expect(await books(user, payment, subscription.id)).toEqual(natural);
  });

  /*
   * A refund made at the gateway before a dispute is listed in the chargeback's refunds[], before
   * the dispute's own entries: when the refund's notification was lost, the chargeback's message
   * (pushed, or a status answer to payments sync) records it as a refund, and its late
   * notification then changes nothing.
   */
  describe('a refund whose notification was lost, then a partial chargeback', () => {
    const refund = { action: 'refund', body: { amount: 500 } };
    const dispute = { action: 'partial_chargeback', body: { amount: 495, reason: 'Cardholder disputes the transaction' } };
    let natural: Awaited<ReturnType<typeof books>>;
    beforeAll(async () => {
      const twin = await paidByCard();
      await replay(twin.payment.order_id, [refund, dispute], 'oldest_first');
      natural = await books(twin.user, twin.payment, twin.subscription.id);
      expect(natural).toMatchObject({
        payment: { status: 'partially_refunded', refunded_amount: '500.00', chargeback_amount: '495.00' },
        invoice: 'paid',
        subscription: 'active',
        access: 200,
      });
      expect(natural.creditNotes.map(([reason, amount]) => amount).sort()).toEqual(['495.00', '500.00']);
      expect(natural.notices.filter((n) => n === 'payment_refunded')).toHaveLength(1);
      expect(natural.notices.filter((n) => n === 'payment_charged_back')).toHaveLength(1);
    });

    it("the chargeback's notification lost too: payments sync records the refund and the chargeback; the refund's late notification changes nothing", async () => {
      const { user, payment, subscription } = await paidByCard();
      await holdNotifications(stage.server, payment.order_id);
      await simulate(stage.server, payment.order_id, refund.action, refund.body);
      await simulate(stage.server, payment.order_id, `${dispute.action}?notify=false`, dispute.body);
      const first = await sync();
      expect(first.code, first.stderr).toBe(0);
      expect(first.json.results.find((r: { order_id: string }) => r.order_id === payment.order_id)).toMatchObject({ gateway_status: 'partial_chargeback', result: 'processed' });
      expect(await books(user, payment, subscription.id)).toEqual(natural);
      expect(await stage.em().count(Refund, { payment: payment.id })).toBe(1);

      const late = await releaseNotifications(stage.server, { order_id: payment.order_id });
      expect(late.map((r) => [r.transaction_status, r.outcomes.map((o) => o.http_status)])).toEqual([['partial_refund', [200]]]);
      expect(await books(user, payment, subscription.id)).toEqual(natural);
      // The gateway's status stays the chargeback's: the refund it reported came before it.
      expect((await stage.em().findOneOrFail(Payment, payment.id)).gatewayStatus).toBe('partial_chargeback');
      expect((await sync()).json.results.find((r: { order_id: string; result: string }) => r.order_id === payment.order_id && r.result === 'processed')).toBeUndefined();
      expect(await books(user, payment, subscription.id)).toEqual(natural);
    });

    it("the chargeback's notification delivered: it records the refund before the chargeback, once; payments sync then finds nothing missing", async () => {
      const { user, payment, subscription } = await paidByCard();
      await holdNotifications(stage.server, payment.order_id);
      await simulate(stage.server, payment.order_id, refund.action, refund.body);
      const lost = await releaseNotifications(stage.server, { order_id: payment.order_id, drop: true });
      expect(lost.map((r) => r.transaction_status)).toEqual(['partial_refund']);
      await simulate(stage.server, payment.order_id, dispute.action, dispute.body);
      expect(await books(user, payment, subscription.id)).toEqual(natural);
      expect(await stage.em().count(Refund, { payment: payment.id })).toBe(1);
      expect((await sync()).json.results.find((r: { order_id: string; result: string }) => r.order_id === payment.order_id && r.result === 'processed')).toBeUndefined();
      expect(await books(user, payment, subscription.id)).toEqual(natural);
    });

    it('a top-up by card, the same: payments sync takes the refund and the chargeback from the wallet, each once', async () => {
      const user: TestUser = await stage.server.createUser();
      const topup = await postTopup(stage.server, user, { amount: 100000, payment_type: 'credit_card', token: 'sim-card-accept-1' });
      expect(topup.status, topup.text).toBe(201);
      await simulate(stage.server, topup.body.order_id, 'settle');
      expect(await walletBalance(stage.server, user)).toBe('100000.00');
      await simulate(stage.server, topup.body.order_id, `${refund.action}?notify=false`, refund.body);
      await simulate(stage.server, topup.body.order_id, `${dispute.action}?notify=false`, dispute.body);
      expect((await sync()).code).toBe(0);
      expect(await walletBalance(stage.server, user)).toBe('99005.00');
      expect((await sync()).json.results.find((r: { order_id: string; result: string }) => r.order_id === topup.body.order_id && r.result === 'processed')).toBeUndefined();
      expect(await walletBalance(stage.server, user)).toBe('99005.00');
    });
  });

  it("row 16: paying again while the first order's settlement is unheard and the gateway refuses to cancel it: its status is applied, nothing charged twice", async () => {
    const { user, payment, subscription } = await pendingBy({ payment_type: 'bank_transfer', metadata: { bank: 'bca' } });
    await simulate(stage.server, payment.order_id, 'settle?notify=false');
    const charges = () => stage.server.running.billing.simulator!.requests().filter((r) => r.operation === 'charge').length;
    const before = charges();

    const again = await api('POST', '/payments/charge/', user, { subscription_id: subscription.id, payment_type: 'qris' });
    expect(again.status, again.text).toBe(409);
    expect(again.body.code).toBe('nothing_due');
    expect(charges()).toBe(before);
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'settled', credited_amount: '0.00' });
    expect(await books(user, payment, subscription.id)).toMatchObject({ invoice: 'paid', subscription: 'active', access: 200, wallet: '0.00' });
  });

  it('the simulator proxy: held notifications are listed, released in the order asked, dropped, and bad requests answer 400/409', async () => {
    const { payment } = await pendingBy({ payment_type: 'echannel' });
    await holdNotifications(stage.server, payment.order_id);
    await simulate(stage.server, payment.order_id, 'settle');
    await simulate(stage.server, payment.order_id, 'deny');
    const held = (await heldNotifications(stage.server)).filter((h) => h.order_id === payment.order_id && h.transaction_status !== 'pending');
    expect(held.map((h) => h.transaction_status)).toEqual(['settlement', 'deny']);
    expect((await stage.server.request('POST', '/_simulator/notifications/release', { body: { order: 'sideways' } })).status).toBe(400);
    expect((await stage.server.request('POST', '/_simulator/notifications/release', { body: { ids: [999999] } })).status).toBe(409);
    expect((await stage.server.request('POST', '/_simulator/notifications/hold', { body: { order_id: 7 } })).status).toBe(400);
    const dropped = await releaseNotifications(stage.server, { ids: [held[0]!.id], drop: true, keep_holding: true });
    expect(dropped.map((d) => [d.transaction_status, d.outcomes])).toEqual([['settlement', []]]);
    const sent = await releaseNotifications(stage.server, { order_id: payment.order_id });
    expect(sent.map((d) => d.transaction_status).filter((st) => st !== 'pending')).toEqual(['deny']);
    expect((await heldNotifications(stage.server)).filter((h) => h.order_id === payment.order_id)).toEqual([]);
  });
});
