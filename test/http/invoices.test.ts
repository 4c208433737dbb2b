import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { openInvoice, simulate, subscribe, type TestUser } from '../helpers/subscriptions.js';

const DAY = 24 * 60 * 60 * 1000;

describe.each(DATABASES)('invoices on %s', (kind) => {
  let server: TestServer;
  let user: TestUser;
  let stranger: TestUser;
  const clock = new ManualClock(new Date('2026-03-01T10:00:00Z'));
  /** Void (50 000, 1 March), paid (150 000, 3 March), open (20 000, 5 March). */
  let invoices: { void: string; paid: string; open: string };

  beforeAll(async () => {
    server = await startTestServer(kind, { clock });
    await server.seedPlans(STANDARD_PLANS);
    user = await server.createUser();
    stranger = await server.createUser();
    await subscribe(server, stranger, { plan_id: 'weekly', payment_type: 'qris' });

    const first = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    clock.advance(2 * DAY);
    const second = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
    await simulate(server, second.body.payment.order_id, 'settle');
    clock.advance(2 * DAY);
    const open = await openInvoice(server, second.body.subscription.id, '20000.00');
    invoices = { void: first.body.payment.invoice_id, paid: second.body.payment.invoice_id, open };
  });
  afterAll(() => server?.stop());

  const list = (query = '') => server.api('GET', `/invoices/${query}`, { auth: user });
  const ids = (res: { body: { results: { id: string }[] } }) => res.body.results.map((i) => i.id);

  it("lists only the user's invoices, newest first, without lines", async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ count: 3, next: null, previous: null });
    expect(ids(res)).toEqual([invoices.open, invoices.paid, invoices.void]);
    expect(res.body.results[0]).not.toHaveProperty('lines');
    expect(res.body.results[1]).toMatchObject({ status: 'paid', issue_date: '2026-03-03', due_date: '2026-03-03', total_amount: '150000.00', paid_at: expect.any(String) });
  });

  it('filters by status', async () => {
    expect(ids(await list('?status=open'))).toEqual([invoices.open]);
    expect(ids(await list('?status=paid'))).toEqual([invoices.paid]);
    expect(ids(await list('?status=void'))).toEqual([invoices.void]);
    expect(ids(await list('?status=uncollectible'))).toEqual([]);
  });

  it('orders by issue_date, due_date and total_amount in both directions', async () => {
    expect(ids(await list('?ordering=issue_date'))).toEqual([invoices.void, invoices.paid, invoices.open]);
    expect(ids(await list('?ordering=-issue_date'))).toEqual([invoices.open, invoices.paid, invoices.void]);
    expect(ids(await list('?ordering=due_date'))).toEqual([invoices.void, invoices.paid, invoices.open]);
    expect(ids(await list('?ordering=-due_date'))).toEqual([invoices.open, invoices.paid, invoices.void]);
    expect(ids(await list('?ordering=total_amount'))).toEqual([invoices.open, invoices.void, invoices.paid]);
    expect(ids(await list('?ordering=-total_amount'))).toEqual([invoices.paid, invoices.void, invoices.open]);
  });

  it('paginates', async () => {
    const page2 = await list('?page_size=2&page=2');
    expect(page2.body).toMatchObject({ count: 3, next: null, previous: expect.stringMatching(/page=1/) });
    expect(ids(page2)).toEqual([invoices.void]);
    expect(ids(await list('?page=5'))).toEqual([]);
  });

  it('detail has the lines; numbers are sequential', async () => {
    const res = await server.api('GET', `/invoices/${invoices.paid}/`, { auth: user });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: invoices.paid, status: 'paid', currency: 'IDR', subtotal: '150000.00', total_amount: '150000.00', amount_refunded: '0.00' });
    expect(res.body.lines).toEqual([
      {
        description: expect.stringContaining('Pro'),
        kind: 'subscription',
        quantity: 1,
        unit_amount: '150000.00',
        amount: '150000.00',
        discount_amount: '0.00',
        period_start: '2026-03-03T10:00:00.000Z',
        period_end: '2026-04-03T10:00:00.000Z',
        usage: null,
      },
    ]);
    const numbers = (await list('?ordering=issue_date')).body.results.map((i: { number: string }) => Number(i.number.slice(-6)));
    expect(numbers[1]! - numbers[0]!).toBeGreaterThan(0);
    expect(numbers[2]! - numbers[1]!).toBe(1);
  });

  it('numbers restart at 000001 in a new year', async () => {
    const before = (await list('?ordering=issue_date')).body.results.map((i: { number: string }) => i.number);
    expect(before.every((n: string) => n.startsWith('INV-2026-'))).toBe(true);
    clock.set(new Date('2027-01-01T00:00:05Z'));
    const newcomer = await server.createUser();
    const created = await subscribe(server, newcomer, { plan_id: 'basic-monthly', payment_type: 'qris' });
    const invoice = await server.api('GET', `/invoices/${created.body.payment.invoice_id}/`, { auth: newcomer });
    expect(invoice.body).toMatchObject({ number: 'INV-2027-000001', issue_date: '2027-01-01' });
  });

  it("another user's invoice and a malformed id are 404; a malformed filter is 400", async () => {
    const res = await server.api('GET', `/invoices/${invoices.paid}/`, { auth: stranger });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('not_found');
    expect((await server.api('GET', '/invoices/INV-2026-000001/', { auth: user })).status).toBe(404);
    expect((await list('?status=draft')).status).toBe(400);
    expect((await list('?ordering=number')).status).toBe(400);
    expect((await server.api('GET', '/invoices/')).status).toBe(401);
  });
});
