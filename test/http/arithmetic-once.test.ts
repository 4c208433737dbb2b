import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { DATABASES } from '../helpers/database.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { fundWallet, subscribe, walletBalance, type TestUser } from '../helpers/subscriptions.js';

/*
 * Arithmetic once (docs/pricing.md, "Rounding"): a change of seats prorates units × price and
 * rounds once; the rupiah an exclusive plan's change must ask beyond what is owed (no DPP gives
 * the amount exactly) pays for the period and is never credited back with a credit note. Both
 * through the real API, paid from the wallet, on a PKP seller's exclusive plans.
 */

const SELLER = { BILLING_PKP: 'true', BILLING_TAX_ID: '0012345678091000', BILLING_SELLER_NITKU: '0012345678091000000000' };
const PLANS: PlanSeed[] = [
  { slug: 'lite', name: 'Lite', price: 50000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 1, tax_behavior: 'exclusive' },
  { slug: 'plus', name: 'Plus', price: 100000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 2, tax_behavior: 'exclusive' },
  { slug: 'seat', name: 'Seat', price: 10000, currency: 'IDR', interval: 1, interval_unit: 'month', sort_order: 3, tax_behavior: 'exclusive', per_unit: true },
];
const DAY = 86_400_000;

/** round(a × b / c), half up, in integers: the figures below recomputed by hand. */
const rounded = (a: number, b: number, c: number) => Math.floor((2 * a * b + c) / (2 * c));
/** PPN on a DPP (12 % of 11/12 of it, that is 11 %), rounded half up. */
const ppn = (dpp: number) => rounded(dpp, 11, 100);

describe.each(DATABASES)('arithmetic once on %s', (kind) => {
  let server: TestServer;
  const clock = new ManualClock(new Date('2026-01-10T03:00:00Z'));
  const api = (method: string, path: string, user: TestUser, body?: unknown) => server.api(method, path, { auth: user, body });

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: SELLER });
    await server.seedPlans(PLANS);
  });
  afterAll(() => server?.stop());

  it('an upgrade whose owed amount no DPP gives: the invoice asks one rupiah more, and that rupiah is no credit note and no wallet credit', async () => {
    clock.set(new Date('2026-01-10T03:00:00Z'));
    const user = await server.createUser();
    await fundWallet(server, user, '500000.00');
    const created = await subscribe(server, user, { plan_id: 'lite', payment_type: 'wallet' });
    expect(created.status, created.text).toBe(201);
    const paid = 50000 + ppn(50000); // 55.500
    expect(created.body.payment.gross_amount).toBe(`${paid}.00`);

    // Six days in: 25 of the period's 31 days are left.
    clock.set(new Date(Date.parse('2026-01-10T03:00:00Z') + 6 * DAY));
    const credit = rounded(paid, 25, 31); // 44.758
    const chargeBase = rounded(100000, 25, 31); // 80.645
    const owed = chargeBase + ppn(chargeBase) - credit; // 44.758
    // No DPP gives 44.758 (40.322 gives 44.757, 40.323 gives 44.759): the invoice asks 44.759.
    expect([40322 + ppn(40322), 40323 + ppn(40323)]).toEqual([owed - 1, owed + 1]);
    const changed = await api('POST', `/subscriptions/${created.body.subscription.id}/change-plan/`, user, { plan_id: 'plus', immediate: true });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.payment).toMatchObject({ status: 'settled', gross_amount: `${owed + 1}.00` });

    // That rupiah pays for the period with the rest: nothing comes back, nothing is documented as given back.
    expect((await api('GET', '/credit-notes/', user)).body.results).toEqual([]);
    expect(await walletBalance(server, user)).toBe(`${500000 - paid - (owed + 1)}.00`);
  });

  it('three more seats with 11 of 31 days left: round(3 × 10.000 × 11/31) = 10.645, not 3 × round(10.000 × 11/31) = 10.644', async () => {
    clock.set(new Date('2026-01-20T03:00:00Z'));
    const user = await server.createUser();
    await fundWallet(server, user, '500000.00');
    const created = await subscribe(server, user, { plan_id: 'seat', payment_type: 'wallet', quantity: 2 });
    expect(created.status, created.text).toBe(201);
    const paid = 20000 + ppn(20000);

    clock.set(new Date(Date.parse('2026-01-20T03:00:00Z') + 20 * DAY));
    const base = rounded(3 * 10000, 11, 31);
    expect(base).toBe(10645);
    expect(3 * rounded(10000, 11, 31)).toBe(10644);

    const changed = await api('POST', `/subscriptions/${created.body.subscription.id}/change-quantity/`, user, { quantity: 5 });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.subscription.quantity).toBe(5);
    const invoice = (await api('GET', `/invoices/${changed.body.payment.invoice_id}/`, user)).body;
    expect(invoice).toMatchObject({ subtotal: `${base}.00`, tax_base: `${base}.00`, tax_amount: `${ppn(base)}.00`, total_amount: `${base + ppn(base)}.00` });
    expect(changed.body.payment.gross_amount).toBe(`${base + ppn(base)}.00`);
    expect(await walletBalance(server, user)).toBe(`${500000 - paid - base - ppn(base)}.00`);
    expect((await api('GET', '/credit-notes/', user)).body.results).toEqual([]);
  });
});
