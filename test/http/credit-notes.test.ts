import type { EntityManager } from '@mikro-orm/knex';
import { beforeEach, describe, expect, it } from 'vitest';
import { CreditNote } from '../../src/db/entities/credit-note.js';
import { Payment } from '../../src/db/entities/payment.js';
import { WalletTransaction } from '../../src/db/entities/wallet.js';
import { add, compare, ZERO } from '../../src/domain/money.js';
import { CreditNoteInvariantError, creditedOnInvoice, issueCreditNote, paidOnInvoice } from '../../src/services/credit-notes/issue-credit-note.js';
import { refundPaymentAsStaff } from '../../src/services/refunds/refund-payment.js';
import { signedNotification } from '../helpers/factories.js';
import { DATABASES } from '../helpers/database.js';
import type { TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, serverOnClock, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 20: money that goes back leaves a document. Every refund, proration credit and unusable
 * settlement credited to the wallet issues one credit note (CN-YYYY-NNNNNN, a gap-free sequence
 * of its own), linked to its invoice, with lines and a reason; the owner reads them, nobody else;
 * the invoice lists them; and an invoice's credit notes never exceed what was paid on it.
 */

const DAY = 24 * 60 * 60 * 1000;
const START = new Date('2026-03-01T03:00:00.000Z');
const CN = /^CN-2026-\d{6}$/;

describe.each(DATABASES)('credit notes on %s', (kind) => {
  const suite = serverOnClock(kind, START, { beforeStop: (s) => expectSequenceAndInvariant(dbOf(s)) });
  const { clock } = suite;
  let server: TestServer;
  let user: TestUser;
  beforeEach(() => {
    ({ server, user } = suite);
  });

  const key = () => server.running.billing.config.gateway.serverKey;
  const notifyWebhook = (fields: Parameters<typeof signedNotification>[1]) => server.api('POST', '/webhook/notification/', { body: signedNotification(key(), fields) });
  const list = async (who: TestUser = user, query = '') => server.api('GET', `/credit-notes/${query}`, { auth: who });
  const detail = async (id: string, who: TestUser = user) => server.api('GET', `/credit-notes/${id}/`, { auth: who });
  const invoiceOf = async (id: string) => (await server.api('GET', `/invoices/${id}/`, { auth: user })).body;

  describe('a refund', () => {
    it('to the wallet issues one credit note of its amount, with its line, reason and links', async () => {
      const { payment } = await activeSubscription(server, user, 'basic-monthly');
      clock.advance(10 * DAY);
      const refunded = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { reason: 'not needed' } });
      expect(refunded.status, refunded.text).toBe(200);

      const page = await list();
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ count: 1, next: null, previous: null });
      const note = page.body.results[0];
      expect(note).toMatchObject({
        invoice_id: payment.invoice_id,
        payment_id: payment.id,
        reason: 'refund',
        memo: 'not needed',
        currency: 'IDR',
        amount: refunded.body.refund.amount,
        wallet_transaction_id: null,
      });
      expect(note.number).toMatch(CN);
      expect(note.refund_id).toEqual(expect.any(String));
      expect(note.invoice_number).toMatch(/^INV-2026-\d{6}$/);

      const one = await detail(note.id);
      expect(one.status).toBe(200);
      expect(one.body.lines).toEqual([{ description: expect.stringContaining(refunded.body.refund.refund_key), amount: refunded.body.refund.amount }]);

      // The invoice lists it.
      const invoice = await invoiceOf(payment.invoice_id);
      expect(invoice.credit_notes).toEqual([{ id: note.id, number: note.number, amount: note.amount, reason: 'refund', issued_at: note.issued_at }]);
    });

    it('through the gateway issues its note when the gateway accepts it, once, however often it is confirmed', async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      await simulate(server, created.body.payment.order_id, 'settle');
      const payment = created.body.payment;
      const res = await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 20000, reason: 'partial' } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.refund.status).toBe('succeeded');
      // The gateway's notification confirms the same keyed refund: no second note.
      const keyed = { refund_chargeback_id: 1, refund_amount: '20000.00', refund_key: res.body.refund.refund_key };
      expect((await notifyWebhook({ order_id: payment.order_id, transaction_status: 'partial_refund', gross_amount: '150000.00', refund_amount: '20000.00', refunds: [keyed] })).status).toBe(200);
      const notes = (await list()).body.results;
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatchObject({ amount: '20000.00', reason: 'refund', memo: 'partial', payment_id: payment.id });
    });

    it("made in the gateway's dashboard issues a note for each increase of the cumulative refund_amount, once per total", async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      await simulate(server, created.body.payment.order_id, 'settle');
      const orderId = created.body.payment.order_id;
      const notice = (status: string, total: string, refunds: Record<string, unknown>[]) =>
        notifyWebhook({ order_id: orderId, transaction_status: status, gross_amount: '150000.00', refund_amount: total, refunds });
      const first = { refund_chargeback_id: 1, refund_amount: '10000.00', reason: 'dashboard' };
      const second = { refund_chargeback_id: 2, refund_amount: '19000.00', reason: 'dashboard' };
      expect((await notice('partial_refund', '10000.00', [first])).status).toBe(200);
      expect((await notice('partial_refund', '29000.00', [first, second])).status).toBe(200);
      // A stale retry of the first total, with another status code: nothing new.
      expect((await notice('refund', '10000.00', [first])).status).toBe(200);
      const notes = (await list()).body.results as { amount: string; reason: string }[];
      expect(notes.map((n) => n.amount).sort()).toEqual(['10000.00', '19000.00']);
      expect(notes.every((n) => n.reason === 'refund')).toBe(true);
      expect((await invoiceOf(created.body.payment.invoice_id)).credit_notes).toHaveLength(2);
    });

    it('reported before the settlement settles the payment first (the refund says the money arrived), then documents the refund once', async () => {
      const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'qris' });
      const orderId = created.body.payment.order_id;
      const part = { refund_chargeback_id: 1, refund_amount: '30000.00', reason: 'dashboard' };
      expect((await notifyWebhook({ order_id: orderId, transaction_status: 'partial_refund', gross_amount: '150000.00', refund_amount: '30000.00', refunds: [part] })).status).toBe(200);
      expect((await invoiceOf(created.body.payment.invoice_id)).status).toBe('paid');
      expect((await list()).body.count).toBe(1);
      // The settlement's own notification, arriving late, changes nothing more.
      expect((await notifyWebhook({ order_id: orderId, transaction_status: 'settlement', gross_amount: '150000.00' })).status).toBe(200);
      const notes = (await list()).body.results;
      expect(notes).toHaveLength(1);
      expect(notes[0]).toMatchObject({ amount: '30000.00', reason: 'refund', invoice_id: created.body.payment.invoice_id });
    });
  });

  it('a proration credit to the wallet issues a note against the invoice that paid for the time', async () => {
    const { subscription, payment } = await activeSubscription(server, user, 'pro-monthly');
    clock.advance(10 * DAY);
    const down = await server.api('POST', `/subscriptions/${subscription.id}/change-plan/`, { auth: user, body: { plan_id: 'basic-monthly' } });
    expect(down.status, down.text).toBe(200);
    const credit = await dbOf(server).findOneOrFail(WalletTransaction, { wallet: { user: user.id }, source: 'proration' });
    const notes = (await list()).body.results;
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({
      reason: 'proration_credit',
      amount: credit.amount,
      invoice_id: payment.invoice_id,
      payment_id: payment.id,
      wallet_transaction_id: credit.id,
      refund_id: null,
    });
    const one = (await detail(notes[0].id)).body;
    expect(one.lines).toEqual([{ description: 'Unused time on Pro after moving to Basic', amount: credit.amount }]);
  });

  it('a settlement nobody can use, credited to the wallet, issues a note with why', async () => {
    const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
    expect((await server.api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } })).status).toBe(200);
    const late = { order_id: created.body.payment.order_id, transaction_status: 'settlement', gross_amount: '150000.00' };
    expect((await notifyWebhook(late)).status).toBe(200);
    // The gateway says it again: still one note.
    expect((await notifyWebhook({ ...late, transaction_id: 'tx-again' })).status).toBe(200);
    const notes = (await list()).body.results;
    expect(notes).toHaveLength(1);
    expect(notes[0]).toMatchObject({ reason: 'unusable_settlement', memo: 'subscription_ended', amount: '150000.00', invoice_id: created.body.payment.invoice_id, refund_id: null });
    expect(notes[0].wallet_transaction_id).toEqual(expect.any(String));
  });

  it("another user's credit note answers 404, and lists show only the caller's", async () => {
    const { payment } = await activeSubscription(server, user, 'basic-monthly');
    expect((await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 1000 } })).status).toBe(200);
    const mine = (await list()).body.results[0];
    const other = await server.createUser();
    expect((await detail(mine.id, other)).status).toBe(404);
    expect((await detail(mine.id, other)).body.code).toBe('not_found');
    expect((await detail('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await list(other)).body).toMatchObject({ count: 0, results: [] });
    expect((await list(user, `?invoice_id=${payment.invoice_id}`)).body.count).toBe(1);
    expect((await list(user, '?invoice_id=00000000-0000-4000-8000-000000000000')).body.count).toBe(0);
    expect((await server.api('GET', '/credit-notes/')).status).toBe(401);
  });

  it('concurrent refunds keep the sequence gap-free and no invoice credited past what was paid', async () => {
    const users = [user, await server.createUser(), await server.createUser()];
    const payments = [];
    for (const u of users) payments.push({ u, payment: (await activeSubscription(server, u, 'pro-monthly', 'qris')).payment });
    // Staff's partial refunds (bounded only by what is refundable), several per payment at once,
    // more than each payment holds in all, beside customers' refunds through the API.
    const { orm, config, gateway } = server.running.billing;
    const staff = (orderId: string) =>
      refundPaymentAsStaff({ em: orm.em.fork() as EntityManager, config, gateway, clock }, orderId, { amount: '40000', reason: 'support', keepSubscription: true }).then(
        () => 'refunded',
        (err: { code?: string }) => err.code ?? String(err),
      );
    const answers = await Promise.all([
      ...payments.flatMap(({ payment }) => [1, 2, 3, 4].map(() => staff(payment.order_id))),
      ...payments.map(({ u, payment }) => server.api('POST', `/payments/${payment.id}/refund/`, { auth: u, body: { amount: 10000 } }).then((r) => (r.status === 200 ? 'refunded' : r.body.code))),
    ]);
    expect(answers.every((a) => ['refunded', 'validation_error', 'invalid_state'].includes(a)), answers.join(', ')).toBe(true);
    expect(answers.filter((a) => a === 'refunded').length, answers.join(', ')).toBeGreaterThanOrEqual(payments.length * 3);
    const em = dbOf(server);
    for (const { payment } of payments) {
      const stored = await em.findOneOrFail(Payment, payment.id);
      const notes = await em.find(CreditNote, { payment: payment.id });
      expect(add(ZERO, ...notes.map((n) => n.amount))).toBe(stored.refundedAmount);
    }
    await expectSequenceAndInvariant(em);
  });

  it('a credit note that would exceed what was paid on the invoice is refused, and its number is not used up', async () => {
    const { payment } = await activeSubscription(server, user, 'basic-monthly');
    const billing = server.running.billing;
    const before = await dbOf(server).count(CreditNote, {});
    const attempt = billing.orm.em.fork().transactional(async (em) => {
      const p = await em.findOneOrFail(Payment, payment.id, { populate: ['invoice', 'user'] });
      await issueCreditNote({ em: em as EntityManager, config: billing.config, clock: billing.clock }, { payment: p, reason: 'refund', amount: '50000.01', lines: [{ description: 'too much', amount: '50000.01' }] });
    });
    await expect(attempt).rejects.toBeInstanceOf(CreditNoteInvariantError);
    expect(await dbOf(server).count(CreditNote, {})).toBe(before);
    // The next real one takes the next number: nothing was skipped.
    expect((await server.api('POST', `/payments/${payment.id}/refund/`, { auth: user, body: { amount: 1000 } })).status).toBe(200);
    await expectSequenceAndInvariant(dbOf(server));
  });
});

/** Every credit note number of 2026 is CN-2026-000001… without a gap, and no invoice is credited past what was paid on it. */
async function expectSequenceAndInvariant(em: EntityManager): Promise<void> {
  const notes = await em.find(CreditNote, {}, { orderBy: { number: 'asc' }, populate: ['invoice'] });
  expect(notes.map((n) => n.number)).toEqual(notes.map((_, i) => `CN-2026-${String(i + 1).padStart(6, '0')}`));
  const ctx = { em } as never;
  for (const invoice of new Set(notes.map((n) => n.invoice))) {
    const credited = await creditedOnInvoice(ctx, invoice);
    const paid = await paidOnInvoice(ctx, invoice);
    expect(compare(credited, paid), `invoice ${invoice.number}: credit notes ${credited}, paid ${paid}`).toBeLessThanOrEqual(0);
  }
}
