import { beforeAll, describe, expect, it } from 'vitest';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { runCli } from '../helpers/cli.js';
import { serverForCli } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { pdfText } from '../helpers/pdf.js';
import { STANDARD_PLANS } from '../helpers/server.js';
import { gatewayStatus, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup, walletBalance } from '../helpers/topups.js';

/*
 * Issue 27, chargebacks (docs/gateway.md, 'Chargebacks'): the card's issuer takes money back
 * after a dispute. A signed `chargeback` was answered `200 ok` and the payment stayed settled
 * with the access: the customer had the money back and the service. Now a `chargeback` is a
 * reversal with its own status (`charged_back`), a `partial_chargeback` records its amount with a
 * credit note, and both tell the customer (`payment_charged_back`). The simulator's
 * `chargeback` and `partial_chargeback` commands act as the issuer.
 */
describe.each(DATABASES)('chargebacks (%s)', (kind) => {
  const stage = serverForCli(kind);
  beforeAll(() => stage.server.seedPlans(STANDARD_PLANS));
  const api = (method: string, path: string, user: TestUser, body?: unknown) => stage.server.api(method, path, { auth: user, body });
  const cli = (...args: string[]) => runCli(args, stage.env);

  /** The issuer's move at the gateway; its notification is answered by the webhook unless `notify` is false. */
  const issuer = async (orderId: string, action: 'chargeback' | 'partial_chargeback', amount?: number, notify = true) => {
    const res = await stage.server.request('POST', `/_simulator/v2/${orderId}/${action}${notify ? '' : '?notify=false'}`, { body: amount === undefined ? {} : { amount } });
    expect(res.status, res.text).toBe(200);
    if (notify) expect(res.body.notification.http_status).toBe(200);
    else expect(res.body.notification).toBeNull();
    return res.body;
  };

  /** A card subscription paid and settled at the gateway (the card's capture settled by the daily batch). */
  const paidByCard = async (plan = 'basic-monthly') => {
    const user: TestUser = await stage.server.createUser();
    const created = await subscribe(stage.server, user, { plan_id: plan, payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(created.status, created.text).toBe(201);
    await simulate(stage.server, created.body.payment.order_id, 'settle');
    const { payment, subscription } = created.body;
    expect((await api('GET', `/payments/${payment.id}/`, user)).body.status).toBe('settled');
    expect((await api('GET', '/subscriptions/active/', user)).status).toBe(200);
    return { user, payment, subscription };
  };

  const paymentOf = async (user: TestUser, id: string) => (await api('GET', `/payments/${id}/`, user)).body;
  const chargebackNotes = async (user: TestUser) =>
    (await api('GET', '/credit-notes/', user)).body.results.filter((n: { reason: string }) => n.reason === 'chargeback');
  const chargebackNotices = async (user: TestUser) =>
    (await api('GET', '/notifications/?notification_type=payment_charged_back&channel=in_app', user)).body.results.map((n: { data: Record<string, unknown> }) => n.data);

  it('a chargeback takes the payment back: charged_back for the gross, invoice open, past_due without access, the customer told; paying again restores it', async () => {
    const { user, payment, subscription } = await paidByCard();
    const result = await issuer(payment.order_id, 'chargeback');
    expect(result.transaction_status).toBe('chargeback');

    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'charged_back', chargeback_amount: '50000.00', refunded_amount: '0.00' });
    expect((await api('GET', `/invoices/${payment.invoice_id}/`, user)).body).toMatchObject({ status: 'open', paid_at: null });
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('past_due');
    expect((await api('GET', '/subscriptions/active/', user)).status).toBe(404);
    expect(await chargebackNotices(user)).toEqual([expect.objectContaining({ order_id: payment.order_id, amount: '50000.00', currency: 'IDR', chargeback_amount: '50000.00', fully_charged_back: true })]);
    // A reversal issues no credit note: the invoice is owed again instead.
    expect(await chargebackNotes(user)).toEqual([]);

    const again = await api('POST', '/payments/charge/', user, { subscription_id: subscription.id, payment_type: 'qris' });
    expect(again.status, again.text).toBe(201);
    expect(again.body.payment).toMatchObject({ status: 'pending', invoice_id: payment.invoice_id });
    await simulate(stage.server, again.body.payment.order_id, 'settle');
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('active');
    expect((await api('GET', `/invoices/${payment.invoice_id}/`, user)).body.status).toBe('paid');
    expect((await api('GET', '/subscriptions/active/', user)).status).toBe(200);
  });

  it('a partial chargeback records its amount with a credit note and tells the customer; subscription and invoice stay as they were', async () => {
    const { user, payment, subscription } = await paidByCard();
    expect((await issuer(payment.order_id, 'partial_chargeback', 20000)).transaction_status).toBe('partial_chargeback');

    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'settled', chargeback_amount: '20000.00', refunded_amount: '0.00' });
    const [note, ...others] = await chargebackNotes(user);
    expect(others).toEqual([]);
    expect(note).toMatchObject({ reason: 'chargeback', amount: '20000.00', invoice_id: payment.invoice_id, payment_id: payment.id });
    expect((await api('GET', `/invoices/${payment.invoice_id}/`, user)).body.status).toBe('paid');
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('active');
    expect((await api('GET', '/subscriptions/active/', user)).status).toBe(200);
    expect(await chargebackNotices(user)).toEqual([expect.objectContaining({ order_id: payment.order_id, chargeback_amount: '20000.00', fully_charged_back: false })]);

    // The gateway's status answer says the same: the total charged back in refund_amount, one entry in refunds[].
    expect(await gatewayStatus(stage.server, payment.order_id)).toMatchObject({ status_code: '200', transaction_status: 'partial_chargeback', refund_amount: '20000.00', refunds: [expect.objectContaining({ refund_amount: '20000.00' })] });
  });

  it("a partial chargeback's credit note keeps the issuer's free-text reason as its memo, on the PDF too; without one in the entry, the message's status_message", async () => {
    const { user, payment } = await paidByCard();
    const reason = 'Cardholder says the service was not as described';
    const res = await stage.server.request('POST', `/_simulator/v2/${payment.order_id}/partial_chargeback`, { body: { amount: 20000, reason } });
    expect(res.status, res.text).toBe(200);
    const [note] = await chargebackNotes(user);
    expect(note).toMatchObject({ reason: 'chargeback', amount: '20000.00', memo: reason });
    const pdf = await fetch(`${stage.server.url}/api/subscriptions/credit-notes/${note.id}/pdf/`, {
      headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` },
    });
    expect(pdf.status).toBe(200);
    expect((await pdfText(Buffer.from(await pdf.arrayBuffer()))).replace(/\s+/g, ' ')).toContain(reason);

    // A second step whose entry carries no reason: the notification's own free text stands in.
    const second = signedNotification(stage.server.config.gateway.serverKey, {
      order_id: payment.order_id,
      transaction_status: 'partial_chargeback',
      gross_amount: '50000.00',
      payment_type: 'credit_card',
      status_message: 'Dispute: duplicate processing',
      refund_amount: '30000.00',
      refunds: [
        { refund_chargeback_id: 1, refund_amount: '20000.00', reason },
        { refund_chargeback_id: 2, refund_amount: '10000.00' },
      ],
    });
    expect((await stage.server.api('POST', '/webhook/notification/', { body: second })).status).toBe(200);
    const memos = (await chargebackNotes(user)).map((n: { amount: string; memo: string | null }) => [n.amount, n.memo]);
    expect(memos.sort()).toEqual([['10000.00', 'Dispute: duplicate processing'], ['20000.00', reason]]);
  });

  it('a partial chargeback, then the full one: charged_back for all, one credit note for the part, no second one', async () => {
    const { user, payment, subscription } = await paidByCard();
    await issuer(payment.order_id, 'partial_chargeback', 20000);
    await issuer(payment.order_id, 'chargeback');

    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'charged_back', chargeback_amount: '50000.00' });
    expect((await chargebackNotes(user)).map((n: { amount: string }) => n.amount)).toEqual(['20000.00']);
    expect((await api('GET', `/invoices/${payment.invoice_id}/`, user)).body.status).toBe('open');
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('past_due');
    expect((await chargebackNotices(user)).map((d: Record<string, unknown>) => [d.chargeback_amount, d.fully_charged_back])).toEqual([
      ['50000.00', true],
      ['20000.00', false],
    ]);
  });

  it('after a refund at the gateway, chargebacks take only what the refund left: money out never exceeds the gross', async () => {
    const { user, payment } = await paidByCard('pro-monthly');
    await simulate(stage.server, payment.order_id, 'refund', { amount: 30000 });
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'partially_refunded', refunded_amount: '30000.00' });

    // The issuer cannot take more than is left (150,000 - 30,000), nor the rest as a "partial" one.
    for (const amount of [120000, 150000]) {
      const refused = await stage.server.request('POST', `/_simulator/v2/${payment.order_id}/partial_chargeback`, { body: { amount } });
      expect(refused.status, refused.text).toBe(409);
    }
    await issuer(payment.order_id, 'partial_chargeback', 50000);
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'partially_refunded', refunded_amount: '30000.00', chargeback_amount: '50000.00' });
    await issuer(payment.order_id, 'chargeback');
    const last = await paymentOf(user, payment.id);
    expect(last).toMatchObject({ status: 'charged_back', refunded_amount: '30000.00', chargeback_amount: '120000.00' });

    // Credit notes follow the money: 30,000 refunded and 50,000 charged back in part.
    const notes = (await api('GET', '/credit-notes/', user)).body.results.map((n: { reason: string; amount: string }) => [n.reason, n.amount]);
    expect(notes).toEqual(expect.arrayContaining([['refund', '30000.00'], ['chargeback', '50000.00']]));
    expect(notes).toHaveLength(2);
  });

  it("chargebacks of a payment whose unused time a downgrade credited to the wallet take that credit back where the card got it too", async () => {
    const { user, payment, subscription } = await paidByCard('pro-monthly');
    const downgraded = await api('POST', `/subscriptions/${subscription.id}/change-plan/`, user, { plan_id: 'basic-monthly', immediate: true });
    expect(downgraded.status, downgraded.text).toBe(200);
    const credited = await walletBalance(stage.server, user);
    expect(Number(credited)).toBeGreaterThan(70000);
    expect((await paymentOf(user, payment.id)).credited_amount).toBe(credited);

    // 80,000 back to the card: with the credit, more than the 150,000 paid; the excess leaves the wallet.
    await issuer(payment.order_id, 'partial_chargeback', 80000);
    expect(await walletBalance(stage.server, user)).toBe('70000.00');
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'settled', chargeback_amount: '80000.00', credited_amount: '70000.00' });
    const notes = (await api('GET', '/credit-notes/', user)).body.results as { reason: string; amount: string }[];
    // The credit's note documents what the card got of it: the notes cover the 150,000 once.
    expect(notes.map((n) => n.reason).sort()).toEqual(['chargeback', 'proration_credit']);
    expect(notes.reduce((sum, n) => sum + Number(n.amount), 0)).toBe(150000);

    await issuer(payment.order_id, 'chargeback');
    expect(await walletBalance(stage.server, user)).toBe('0.00');
    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'charged_back', chargeback_amount: '150000.00', credited_amount: '0.00' });
    expect((await cli('wallet', 'verify', '--json')).json.ok).toBe(true);
  });

  it('a charged-back top-up comes out of the wallet, below zero when it was spent; a partial one first takes its part; wallet verify passes', async () => {
    const user: TestUser = await stage.server.createUser();
    const topup = await postTopup(stage.server, user, { amount: 100000, payment_type: 'credit_card', token: 'sim-card-accept-1' });
    expect(topup.status, topup.text).toBe(201);
    await simulate(stage.server, topup.body.order_id, 'settle');
    expect(await walletBalance(stage.server, user)).toBe('100000.00');
    // Spent at once on a wallet-paid subscription.
    expect((await subscribe(stage.server, user, { plan_id: 'basic-monthly', payment_type: 'wallet' })).status).toBe(201);
    expect(await walletBalance(stage.server, user)).toBe('50000.00');

    await issuer(topup.body.order_id, 'partial_chargeback', 30000);
    expect((await api('GET', `/topups/${topup.body.id}/`, user)).body.status).toBe('success');
    expect(await walletBalance(stage.server, user)).toBe('20000.00');

    await issuer(topup.body.order_id, 'chargeback');
    expect((await api('GET', `/topups/${topup.body.id}/`, user)).body.status).toBe('charged_back');
    expect(await walletBalance(stage.server, user)).toBe('-50000.00');
    expect((await chargebackNotices(user)).map((d: Record<string, unknown>) => [d.topup_id, d.chargeback_amount, d.fully_charged_back])).toEqual([
      [topup.body.id, '100000.00', true],
      [topup.body.id, '30000.00', false],
    ]);

    const verified = await cli('wallet', 'verify', '--json');
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.json.ok).toBe(true);
    expect(verified.json.negative_balances).toEqual(expect.arrayContaining([expect.objectContaining({ user_id: user.id, balance: '-50000.00' })]));
  });

  it('the same notification twice, or a partial one after the full chargeback, changes nothing more', async () => {
    const { user, payment } = await paidByCard();
    await issuer(payment.order_id, 'partial_chargeback', 20000);
    await issuer(payment.order_id, 'chargeback');
    const before = { payment: await paymentOf(user, payment.id), notes: await chargebackNotes(user), notices: await chargebackNotices(user) };

    const delivered = stage.server.running.billing.simulator!.deliveries().filter((d) => d.order_id === payment.order_id);
    const full = delivered.find((d) => d.transaction_status === 'chargeback')!.payload;
    const partial = delivered.find((d) => d.transaction_status === 'partial_chargeback')!.payload;
    const stale = signedNotification(stage.server.config.gateway.serverKey, {
      order_id: payment.order_id,
      transaction_status: 'partial_chargeback',
      gross_amount: '50000.00',
      payment_type: 'credit_card',
      refund_amount: '35000.00',
      refunds: [{ refund_chargeback_id: 9, refund_amount: '35000.00', reason: 'chargeback' }],
    });
    for (const body of [full, partial, stale]) {
      const res = await stage.server.api('POST', '/webhook/notification/', { body });
      expect(res.status, res.text).toBe(200);
    }

    expect(await paymentOf(user, payment.id)).toEqual(before.payment);
    expect(await chargebackNotes(user)).toEqual(before.notes);
    expect(await chargebackNotices(user)).toEqual(before.notices);
    // Two duplicates; the stale partial one is new to the log but moves nothing.
    const logs = await stage.em().find(WebhookLog, { orderId: payment.order_id, transactionStatus: { $in: ['chargeback', 'partial_chargeback'] } });
    expect(logs.map((l) => l.status).sort()).toEqual(['duplicate', 'duplicate', 'processed', 'processed', 'processed']);
  });

  it('a chargeback of a card payment whose capture and settlement were never heard of settles it first, then takes it back', async () => {
    const user: TestUser = await stage.server.createUser();
    const created = await subscribe(stage.server, user, { plan_id: 'basic-monthly', payment_type: 'credit_card', token: 'sim-card-challenge-1' });
    expect(created.status, created.text).toBe(201);
    const { payment, subscription } = created.body;
    expect(payment.status).toBe('pending');
    for (const action of ['capture', 'settle']) {
      const res = await stage.server.request('POST', `/_simulator/v2/${payment.order_id}/${action}?notify=false`);
      expect(res.status, res.text).toBe(200);
    }
    await issuer(payment.order_id, 'chargeback');

    expect(await paymentOf(user, payment.id)).toMatchObject({ status: 'charged_back', chargeback_amount: '50000.00' });
    expect((await api('GET', `/invoices/${payment.invoice_id}/`, user)).body.status).toBe('open');
    expect((await api('GET', `/subscriptions/${subscription.id}/`, user)).body.status).toBe('past_due');
    expect((await api('GET', '/subscriptions/active/', user)).status).toBe(404);
  });

  it('chargebacks whose notifications were lost are found by payments sync and applied once', async () => {
    const sync = () => runCli(['payments', 'sync', '--json'], stage.env);
    const full = await paidByCard();
    const partial = await paidByCard();
    // Whatever earlier tests left for the look back is applied now, so the run below shows only these two.
    expect((await sync()).code).toBe(0);
    await issuer(full.payment.order_id, 'chargeback', undefined, false);
    await issuer(partial.payment.order_id, 'partial_chargeback', 15000, false);
    // Nothing arrived: the service still says settled, with the access.
    expect(await paymentOf(full.user, full.payment.id)).toMatchObject({ status: 'settled', chargeback_amount: '0.00' });

    const first = await sync();
    expect(first.code, first.stderr).toBe(0);
    const byOrder = (orderId: string) => first.json.results.find((r: { order_id: string }) => r.order_id === orderId);
    expect(byOrder(full.payment.order_id)).toMatchObject({ gateway_status: 'chargeback', status_before: 'settled', status_after: 'charged_back', result: 'processed' });
    expect(byOrder(partial.payment.order_id)).toMatchObject({ gateway_status: 'partial_chargeback', status_before: 'settled', status_after: 'settled', result: 'processed' });
    expect(first.json).toMatchObject({ count: 2, changed: 2 });
    const log = await stage.em().findOneOrFail(WebhookLog, { orderId: full.payment.order_id, transactionStatus: 'chargeback' });
    expect(log).toMatchObject({ source: 'sync', status: 'processed' });

    expect((await api('GET', `/subscriptions/${full.subscription.id}/`, full.user)).body.status).toBe('past_due');
    expect((await api('GET', '/subscriptions/active/', full.user)).status).toBe(404);
    expect(await paymentOf(partial.user, partial.payment.id)).toMatchObject({ status: 'settled', chargeback_amount: '15000.00' });
    expect((await chargebackNotes(partial.user)).map((n: { amount: string }) => n.amount)).toEqual(['15000.00']);
    expect((await chargebackNotices(full.user)).length + (await chargebackNotices(partial.user)).length).toBe(2);

    // A second run finds nothing new.
    const second = await sync();
    expect(second.code, second.stderr).toBe(0);
    expect(second.json).toMatchObject({ count: 0, changed: 0 });
  });

  it('the simulator charges back only as Midtrans allows: settled card transactions, within what is left', async () => {
    const { payment } = await paidByCard();
    const user: TestUser = await stage.server.createUser();
    const qris = await subscribe(stage.server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    const command = (orderId: string, action: string, body: unknown = {}) => stage.server.request('POST', `/_simulator/v2/${orderId}/${action}`, { body });

    expect((await command(qris.body.payment.order_id, 'chargeback')).status).toBe(409); // pending
    await simulate(stage.server, qris.body.payment.order_id, 'settle');
    expect((await command(qris.body.payment.order_id, 'chargeback')).status).toBe(409); // not a card
    expect((await command(payment.order_id, 'partial_chargeback')).status).toBe(400); // no amount
    expect((await command(payment.order_id, 'partial_chargeback', { amount: 'much' })).status).toBe(400);
    expect((await command(payment.order_id, 'chargeback', { amount: 1000 })).status).toBe(409); // a full one takes the rest
    expect((await command('SUB-nothing-here', 'chargeback')).status).toBe(404);

    await issuer(payment.order_id, 'chargeback');
    expect((await command(payment.order_id, 'partial_chargeback', { amount: 1000 })).status).toBe(409); // nothing left
    // A refund of a charged-back transaction is refused at the gateway.
    expect((await command(payment.order_id, 'refund', { amount: 1000 })).status).toBe(409);
  });
});
