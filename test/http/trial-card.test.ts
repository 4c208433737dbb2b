import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { TrialGrant } from '../../src/db/entities/trial-grant.js';
import { PromotionCode } from '../../src/db/entities/coupon.js';
import type { EntityManager } from '@mikro-orm/knex';
import { WebhookLog } from '../../src/db/entities/webhook-log.js';
import { DAY, startBilling, type BillingHarness } from '../helpers/billing.js';
import { makePromotionCode } from '../helpers/coupons.js';
import { DATABASES } from '../helpers/database.js';
import { storedCounts, type TestUser } from '../helpers/subscriptions.js';
import { completeThreeDs } from '../helpers/three-ds.js';

/*
 * Issue 37, row 3: a card given when subscribing to a trial was dropped; at the trial's end the
 * renewal found no card. Now the card is pre-authorised (credit_card.type "authorize", 3-D Secure
 * as for a charge, save_token_id), the authorisation canceled once the card is saved, and the
 * saved card charged at the trial's end. All over HTTP against the real server and its simulator.
 */
describe.each(DATABASES)('a card given for a trial (%s)', (kind) => {
  let h: BillingHarness;
  beforeAll(async () => {
    h = await startBilling(kind);
  });
  afterAll(async () => {
    await h.stop();
  });

  const subscribe = (user: TestUser, token: string) =>
    h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'credit_card', token } });
  const simulator = () => h.server.running.billing.simulator!;
  const grants = (userId: string) => h.server.running.billing.orm.em.fork().count(TrialGrant, { user: userId });

  it('is pre-authorised for the first period, saved, the authorisation canceled (no money moved), and charged at the trial\'s end', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'sim-card-accept-trial-1');
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.payment).toBeNull();
    expect(res.body.subscription).toMatchObject({ status: 'trialing', payment_type: 'credit_card', last_renewal_failure: null });
    const check = res.body.card_authorization;
    expect(check).toMatchObject({ status: 'saved', amount: '150000.00', currency: 'IDR', redirect_url: null, masked_card: '48111111-1114' });
    expect(check.order_id).toMatch(/^CARD-[0-9A-F]{32}$/);

    // At the gateway: an authorisation with 3-D Secure asked and the card saved, then canceled.
    const tx = simulator().transaction(check.order_id)!;
    expect(tx).toMatchObject({ payment_type: 'credit_card', gross_amount: 150000, transaction_status: 'cancel', settlement_time: null });
    expect(tx.history.map((s) => s.transaction_status)).toEqual(['authorize', 'cancel']);
    expect(tx.card).toMatchObject({ authorize_only: true, save_token_requested: true, authentication: true, initiated_by: 'customer' });
    const stored = await h.sub(res.body.subscription.id);
    expect(stored.cardToken).toBe(tx.card!.saved_token_id);
    expect(stored.cardToken).toEqual(expect.any(String));
    expect(await grants(user.id)).toBe(1);

    // The trial's end: the renewal charges the saved card, merchant-initiated.
    h.clock.set(new Date(stored.trialEnd!.getTime() + 60_000));
    const report = await h.run();
    expect(report, JSON.stringify(report.actions)).toMatchObject({ renewed: 1, trial_ended: 1, charged: 1, failed: 0, errors: [], renewal_failures: [] });
    const payments = await h.payments(stored.id);
    expect(payments.map((p) => [p.paymentType, p.status, p.grossAmount])).toEqual([['credit_card', 'settled', '150000.00']]);
    expect(simulator().transaction(payments[0]!.orderId)!.card).toMatchObject({ token_id: stored.cardToken, initiated_by: 'merchant' });
    const after = await h.server.api('GET', `/subscriptions/${stored.id}/`, { auth: user });
    expect(after.body).toMatchObject({ status: 'active', cycles_completed: 1, last_renewal_failure: null });
  });

  it('a declined card answers 422 card_declined with the bank\'s reason; nothing is created and the trial stays available', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'sim-card-deny-trial');
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'card_declined', status: 422 });
    expect(res.body.detail).toContain('Do not honor');
    expect(await storedCounts(h.server, user)).toMatchObject({ subscriptions: 0, invoices: 0, payments: 0 });
    expect(await grants(user.id)).toBe(0);

    const again = await subscribe(user, 'sim-card-accept-trial-2');
    expect(again.status).toBe(201);
    expect(again.body.subscription.status).toBe('trialing');
  });

  it('a token the gateway refuses answers 502 gateway_error with its message; nothing is created', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user, 'sim-card-invalid-token');
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'gateway_error' });
    expect(res.body.detail).toContain('Token id is missing, invalid, or timed out');
    expect(await storedCounts(h.server, user)).toMatchObject({ subscriptions: 0, invoices: 0, payments: 0 });
    expect(await grants(user.id)).toBe(0);
  });

  it('a trial without a card is unchanged: trialing, no card authorisation', async () => {
    const user = await h.server.createUser();
    const res = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'bank_transfer' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ payment: null, card_authorization: null, subscription: { status: 'trialing' } });
  });

  it('the simulator models pre-authorisation: no settlement by itself, captured (POST /v2/capture) then settled, or canceled with nothing captured', async () => {
    const key = h.server.config.gateway.serverKey;
    const base = `${h.server.url}/_simulator`;
    const core = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` },
        body: JSON.stringify(body),
      });
      return (await res.json()) as Record<string, unknown>;
    };
    const authorize = (orderId: string) =>
      core('/v2/charge', {
        payment_type: 'credit_card',
        transaction_details: { order_id: orderId, gross_amount: 90000 },
        credit_card: { token_id: 'sim-card-accept-preauth', type: 'authorize', save_token_id: true },
      });

    const first = await authorize(`PREAUTH-A-${Date.now()}`);
    expect(first).toMatchObject({ status_code: '200', transaction_status: 'authorize', fraud_status: 'accept', saved_token_id: expect.any(String) });
    expect(simulator().nextDay()).not.toContain(first.order_id);
    expect(simulator().transaction(String(first.order_id))!.transaction_status).toBe('authorize');
    const captured = await core('/v2/capture', { transaction_id: first.transaction_id, gross_amount: 90000 });
    expect(captured).toMatchObject({ status_code: '200', transaction_status: 'capture' });
    expect(simulator().nextDay()).toContain(first.order_id);
    expect(simulator().transaction(String(first.order_id))!.transaction_status).toBe('settlement');

    const second = await authorize(`PREAUTH-B-${Date.now()}`);
    const canceled = await core(`/v2/${second.order_id}/cancel`, null);
    expect(canceled).toMatchObject({ status_code: '200', transaction_status: 'cancel' });
    // Nothing can be captured from a released authorisation.
    expect(await core('/v2/capture', { transaction_id: second.transaction_id })).toMatchObject({ status_code: '412' });
    const tx = simulator().transaction(String(second.order_id))!;
    expect(tx.history.map((s) => s.transaction_status)).toEqual(['authorize', 'cancel']);
    expect(tx.settlement_time).toBeNull();
  });
});

describe.each(DATABASES)('a card given for a trial, with 3-D Secure (%s)', (kind) => {
  let h: BillingHarness;
  beforeAll(async () => {
    // The simulator in its faithful mode: 3-D Secure whenever the charge asks for it, as Midtrans does.
    h = await startBilling(kind, undefined, { SIMULATOR_3DS: 'when_asked' });
  });
  afterAll(async () => {
    await h.stop();
  });

  const subscribe = (user: TestUser) =>
    h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'credit_card', token: 'tok-3ds-481111-1114' } });
  const stored = (id: string) => h.server.running.billing.orm.em.fork().findOneOrFail(Subscription, id);

  it('waits pending for 3-D Secure like a card charge, then the trial starts with the card saved and the authorisation canceled', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user);
    expect(res.status).toBe(201);
    expect(res.body.payment).toBeNull();
    expect(res.body.subscription).toMatchObject({ status: 'pending', trial_end: null });
    expect(res.body.card_authorization).toMatchObject({ status: 'pending', redirect_url: expect.stringMatching(/^http/) });
    const id = res.body.subscription.id;
    // No access meanwhile.
    expect((await h.server.api('GET', '/subscriptions/active/', { auth: user })).status).toBe(404);

    // The page reports the status once the notification was answered: by then the service may
    // already have saved the card and canceled the authorisation.
    expect(['authorize', 'cancel']).toContain(await completeThreeDs(res.body.card_authorization.redirect_url, 'authenticate'));
    // The gateway's notification is the cue; the service asks the gateway and starts the trial.
    await vi.waitFor(async () => expect((await stored(id)).status).toBe('trialing'), { timeout: 10_000, interval: 50 });
    const sub = await stored(id);
    const tx = h.server.running.billing.simulator!.transaction(res.body.card_authorization.order_id)!;
    expect(sub.cardToken).toBe(tx.card!.saved_token_id);
    expect(sub.trialEnd!.getTime()).toBe(h.clock.now().getTime() + 14 * DAY);
    await vi.waitFor(() => expect(tx.transaction_status).toBe('cancel'), { timeout: 10_000, interval: 50 });
    expect((await h.server.api('GET', '/subscriptions/active/', { auth: user })).body).toMatchObject({ id, status: 'trialing' });
    // The notification is logged as no payment's, saying what it led to.
    await vi.waitFor(async () => {
      const log = await h.server.running.billing.orm.em.fork().findOneOrFail(WebhookLog, { orderId: res.body.card_authorization.order_id, transactionStatus: 'authorize' });
      expect(log).toMatchObject({ status: 'ignored', error: expect.stringContaining(`Card pre-authorisation of subscription ${id}`) });
    }, { timeout: 10_000, interval: 50 });
  });

  it('a failed 3-D Secure cancels the waiting subscription (card_declined); the trial stays available', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user);
    const id = res.body.subscription.id;
    expect(await completeThreeDs(res.body.card_authorization.redirect_url, 'fail')).toBe('deny');
    await vi.waitFor(async () => expect((await stored(id)).status).toBe('canceled'), { timeout: 10_000, interval: 50 });
    expect((await stored(id)).cancelReason).toBe('card_declined');
    expect(await h.server.running.billing.orm.em.fork().count(TrialGrant, { user: user.id })).toBe(0);
    expect((await storedCounts(h.server, user)).invoices).toBe(0);
  });

  it('a one-use promotion code given with a trial whose 3-D Secure failed, or that was canceled while it waited, is given back', async () => {
    const em = () => h.server.running.billing.orm.em.fork() as unknown as EntityManager;
    const code = await makePromotionCode(em(), { maxRedemptions: 1 });
    const withCode = (user: TestUser) =>
      h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'pro-trial', payment_type: 'credit_card', token: 'tok-3ds-481111-1114', promotion_code: code.code } });
    const used = async () => (await em().findOneOrFail(PromotionCode, code.id)).timesRedeemed;

    const declined = await withCode(await h.server.createUser());
    expect(declined.status, declined.text).toBe(201);
    expect(await used()).toBe(1);
    expect(await completeThreeDs(declined.body.card_authorization.redirect_url, 'fail')).toBe('deny');
    await vi.waitFor(async () => expect((await stored(declined.body.subscription.id)).status).toBe('canceled'), { timeout: 10_000, interval: 50 });
    expect(await used()).toBe(0);

    const user = await h.server.createUser();
    const waiting = await withCode(user);
    expect(waiting.status, waiting.text).toBe(201);
    expect(await used()).toBe(1);
    const canceled = await h.server.api('POST', `/subscriptions/${waiting.body.subscription.id}/cancel/`, { auth: user, body: { immediate: true } });
    expect(canceled.status, canceled.text).toBe(200);
    expect(await used()).toBe(0);
  });

  it('a 3-D Secure page left unanswered expires at the gateway: the waiting subscription is canceled, nothing else was made', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user);
    const id = res.body.subscription.id;
    // The page is valid ten minutes (on the gateway's own clock); then the gateway expires the order and says so.
    await h.server.running.billing.simulator!.act(res.body.card_authorization.order_id, 'expire');
    await vi.waitFor(async () => expect((await stored(id)).status).toBe('canceled'), { timeout: 10_000, interval: 50 });
    expect((await stored(id)).cancelReason).toBe('card_declined');
    expect(await storedCounts(h.server, user)).toMatchObject({ invoices: 0, payments: 0 });
  });

  it('GET /subscriptions/{id}/sync/ finishes it too (the notification never came)', async () => {
    const user = await h.server.createUser();
    const res = await subscribe(user);
    const id = res.body.subscription.id;
    const simulator = h.server.running.billing.simulator!;
    // The customer passed 3-D Secure, but the gateway's notification was lost.
    await simulator.act(res.body.card_authorization.order_id, 'capture', { notify: false }).catch(() => undefined);
    const tx = simulator.transaction(res.body.card_authorization.order_id)!;
    expect(tx.transaction_status).toBe('authorize');
    expect((await stored(id)).status).toBe('pending');
    const synced = await h.server.api('GET', `/subscriptions/${id}/sync/`, { auth: user });
    expect(synced.status).toBe(200);
    expect(synced.body).toMatchObject({ status: 'trialing' });
    expect(tx.transaction_status).toBe('cancel');
  });
});
