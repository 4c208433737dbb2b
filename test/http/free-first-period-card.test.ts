import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../src/db/entities/user.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import { dbOf } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

/*
 * A card given for a first period that costs nothing (a 100 % code) is kept as a trial's card is
 * (docs/billing.md, 'What a pass does, per subscription', where a trial's card and a free first period's card are told): pre-authorised for the first full-price period,
 * saved, the hold released; a plan change can charge it, and the first full-price renewal does.
 * Over HTTP against the real server and its simulator.
 */
describe.each(DATABASES)('a card given for a free first period (%s)', (kind) => {
  let h: BillingHarness;
  let code: string;
  beforeAll(async () => {
    h = await startBilling(kind);
    const em = dbOf(h.server);
    code = (await makePromotionCode(em, { coupon: await makeCoupon(em, { percentOff: '100.00', duration: 'once', plans: ['basic-monthly'] }) })).code;
  });
  afterAll(() => h?.stop());

  const simulator = () => h.server.running.billing.simulator!;
  const subscribe = (user: { username: string; password: string }, token: string) =>
    h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'basic-monthly', payment_type: 'credit_card', token, promotion_code: code } });

  it('is pre-authorised for the full price, saved and released; the first full-price renewal charges it', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'sim-card-accept-free-1');
    expect(res.status, res.text).toBe(201);
    expect(res.body.subscription).toMatchObject({ status: 'active', payment_type: 'credit_card' });
    expect(res.body.payment).toMatchObject({ gross_amount: '0.00', status: 'settled' });
    const check = res.body.card_authorization;
    expect(check).toMatchObject({ status: 'saved', amount: '50000.00', currency: 'IDR' });
    const tx = simulator().transaction(check.order_id)!;
    expect(tx.history.map((s) => s.transaction_status)).toEqual(['authorize', 'cancel']);
    expect(tx.card).toMatchObject({ authorize_only: true, save_token_requested: true });
    const stored = await h.sub(res.body.subscription.id);
    expect(stored.cardToken).toBe(tx.card!.saved_token_id);

    // The first full-price renewal charges the saved card, merchant-initiated.
    h.clock.set(new Date(stored.currentPeriodEnd!.getTime() + 60_000));
    const report = await h.run();
    expect(report, JSON.stringify(report.actions)).toMatchObject({ renewed: 1, charged: 1, failed: 0, errors: [], renewal_failures: [] });
    const renewal = (await h.payments(stored.id)).find((p) => p.invoice?.billingReason === 'subscription_cycle')!;
    expect([renewal.paymentType, renewal.status, renewal.grossAmount]).toEqual(['credit_card', 'settled', '50000.00']);
    expect(simulator().transaction(renewal.orderId)!.card).toMatchObject({ token_id: stored.cardToken, initiated_by: 'merchant' });
    expect((await h.server.api('GET', `/subscriptions/${stored.id}/`, { auth: user })).body).toMatchObject({ status: 'active', last_renewal_failure: null });
  });

  // The code is Basic's only: Pro's share of the period is charged in full.
  it('a plan change charges the saved card', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'sim-card-accept-free-2');
    expect(res.status, res.text).toBe(201);
    const subId = res.body.subscription.id as string;
    const changed = await h.server.api('POST', `/subscriptions/${subId}/change-plan/`, { auth: user, body: { plan_id: 'pro-monthly', immediate: true } });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.subscription).toMatchObject({ plan: { slug: 'pro-monthly' }, pending_change: null });
    const stored = await h.sub(subId);
    const payments = await h.payments(subId);
    const change = payments.find((p) => p.invoice?.billingReason === 'subscription_update')!;
    expect(change, JSON.stringify(payments.map((p) => [p.paymentType, p.status, p.grossAmount, p.invoice?.billingReason]))).toBeDefined();
    expect([change.paymentType, change.status]).toEqual(['credit_card', 'settled']);
    expect(simulator().transaction(change.orderId)!.card).toMatchObject({ token_id: stored.cardToken });
  });

  it('a card that asks for 3-D Secure: the free period starts at once, the card is saved once 3-D Secure passes', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'tok-3ds-481111-1114');
    expect(res.status, res.text).toBe(201);
    expect(res.body.subscription.status).toBe('active');
    const check = res.body.card_authorization;
    expect(check).toMatchObject({ status: 'pending', redirect_url: expect.any(String) });
    // The page reports the order as it stands then: approved, or already released by our cancel.
    expect(['authorize', 'cancel']).toContain(await completeThreeDs(check.redirect_url));
    // The gateway's notification (or the customer's sync) saves the card and releases the hold.
    await h.server.api('GET', `/subscriptions/${res.body.subscription.id}/sync/`, { auth: user });
    const stored = await h.sub(res.body.subscription.id);
    const tx = simulator().transaction(check.order_id)!;
    expect(stored.cardToken).toBe(tx.card!.saved_token_id);
    expect(tx.transaction_status).toBe('cancel');
    expect(await dbOf(h.server).count(User, { id: user.id })).toBe(1);
  });
});
