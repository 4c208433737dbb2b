import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { signedNotification } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { subscribe, type TestUser } from '../helpers/subscriptions.js';
import { postTopup, walletBalance } from '../helpers/topups.js';

/*
 * Issue 27, Automatic Fee Imposition (docs/gateway.md, 'How the simulator behaves'): the customer pays the
 * gateway's fee on top, and the settlement's gross_amount includes it, itemised in
 * metadata.extra_info.gross_amount_info. It was answered 503 forever and the paid customer
 * stayed pending. The simulator's `settle?customer_fee=N` settles as Midtrans does then.
 */
describe.each(DATABASES)('a settlement with a customer-imposed fee (%s)', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const settleWithFee = async (orderId: string, fee: number) => {
    const res = await server.request('POST', `/_simulator/v2/${orderId}/settle?customer_fee=${fee}`);
    expect(res.status, res.text).toBe(200);
    return res.body.notification as { http_status: number | null };
  };

  it('is a normal settlement: the subscription is active, the invoice paid, the payment records the fee; a refund returns only what we were paid', async () => {
    const user: TestUser = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    expect(created.status, created.text).toBe(201);
    const { payment, subscription } = created.body;
    expect((await settleWithFee(payment.order_id, 4000)).http_status).toBe(200);

    const paid = (await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body;
    expect(paid).toMatchObject({ status: 'settled', gross_amount: '50000.00', customer_fee: '4000.00', refunded_amount: '0.00' });
    expect((await server.api('GET', `/subscriptions/${subscription.id}/`, { auth: user })).body.status).toBe('active');
    expect((await server.api('GET', `/invoices/${payment.invoice_id}/`, { auth: user })).body.status).toBe('paid');

    const refund = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: {} });
    expect(refund.status, refund.text).toBe(200);
    expect(refund.body.refund.amount).toBe('50000.00');
    expect((await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body).toMatchObject({ refunded_amount: '50000.00', customer_fee: '4000.00' });
  });

  it('a top-up paid with a fee credits the wallet with the top-up amount, not the fee', async () => {
    const user: TestUser = await server.createUser();
    const topup = await postTopup(server, user, { amount: 30000, payment_type: 'bank_transfer' });
    expect((await settleWithFee(topup.body.order_id, 2500)).http_status).toBe(200);
    expect(await walletBalance(server, user)).toBe('30000.00');
  });

  it.each([
    ['a fee that does not account for the difference', { original_amount: '50000.00', gross_amount: '54000.00', customer_imposed_payment_fee: '3000.00' }, '54000.00'],
    ['an original amount that is not ours', { original_amount: '51000.00', gross_amount: '54000.00', customer_imposed_payment_fee: '3000.00' }, '54000.00'],
    ['an itemised gross that is not the notified one', { original_amount: '50000.00', gross_amount: '53000.00', customer_imposed_payment_fee: '3000.00' }, '54000.00'],
    ['no fee at all', { original_amount: '50000.00', gross_amount: '54000.00', customer_imposed_payment_fee: '0.00' }, '54000.00'],
    ['a negative fee', { original_amount: '50000.00', gross_amount: '47000.00', customer_imposed_payment_fee: '-3000.00' }, '47000.00'],
  ])('any other mismatch still fails (503, payment pending): %s', async (_what, info, gross) => {
    const user: TestUser = await server.createUser();
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    const { payment } = created.body;
    const body = signedNotification(server.config.gateway.serverKey, {
      order_id: payment.order_id,
      transaction_status: 'settlement',
      gross_amount: gross,
      metadata: { extra_info: { gross_amount_info: info } },
    });
    const res = await server.api('POST', '/webhook/notification/', { body });
    expect(res.status, res.text).toBe(503);
    expect(res.body.status).toBe('failed');
    expect((await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body).toMatchObject({ status: 'pending', customer_fee: '0.00' });
  });
});
