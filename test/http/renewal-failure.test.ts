import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { DAY, startBilling, type BillingHarness } from '../helpers/billing.js';
import { DATABASES } from '../helpers/database.js';
import type { TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 37, row 3: a renewal that failed left its reason only in the billing run's output. Now
 * every failed renewal keeps `last_renewal_failure` on the subscription (customer and staff see
 * it), is an audit event by the run's actor, and is listed in the run's summary; a paid renewal
 * clears it.
 */
describe.each(DATABASES)('when a renewal fails (%s)', (kind) => {
  let h: BillingHarness;
  let staff: TestUser;
  beforeAll(async () => {
    h = await startBilling(kind);
    staff = await h.server.createUser({ isStaff: true });
  });
  afterAll(async () => {
    await h.stop();
  });

  const db = () => h.server.running.billing.orm.em.fork();
  const customerView = async (user: TestUser, id: string) => (await h.server.api('GET', `/subscriptions/${id}/`, { auth: user })).body;
  const staffView = async (id: string) => (await h.server.api('GET', `/admin/subscriptions/${id}/`, { auth: staff })).body;
  const auditOf = async (id: string) => (await h.server.api('GET', `/admin/audit-events/?target=${id}`, { auth: staff })).body.results as Record<string, any>[];
  /** The run's failures of one subscription (other tests' subscriptions may be due at the same time). */
  const failuresOf = (report: { renewal_failures: { subscription_id: string }[] }, id: string) => report.renewal_failures.filter((f) => f.subscription_id === id);
  const subscribeWithCard = async (user: TestUser, plan: string) => {
    const res = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: plan, payment_type: 'credit_card', token: 'sim-card-accept-renewal' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.subscription.id as string;
  };

  it('a trial whose saved card was forgotten (as after a chargeback): payment_method_required, not a crash; kept for the customer and staff, audited, cleared by a paid renewal', async () => {
    const user = await h.server.createUser();
    const id = await subscribeWithCard(user, 'pro-trial');
    await db().nativeUpdate(Subscription, { id }, { cardToken: null });
    const trialEnd = (await h.sub(id)).trialEnd!;

    h.clock.set(new Date(trialEnd.getTime() + 60_000));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, trial_ended: 1, failed: 1, charged: 0, errors: [] });
    expect(report.renewal_failures).toEqual([{ subscription_id: id, invoice_number: expect.stringMatching(/^INV-/), code: 'payment_method_required', message: expect.stringContaining('No saved card') }]);

    const failure = { at: h.clock.now().toISOString(), code: 'payment_method_required', message: expect.stringContaining('new payment method') };
    expect(await customerView(user, id)).toMatchObject({ status: 'trialing', last_renewal_failure: failure });
    expect(await staffView(id)).toMatchObject({ id, last_renewal_failure: failure });
    const events = await auditOf(id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      action: 'subscription.renewal_failed',
      actor: { type: 'system', name: 'system' },
      target: { type: 'subscription', id },
      reason: expect.stringContaining('payment_method_required'),
      changes: { last_renewal_failure: [null, { code: 'payment_method_required' }] },
    });

    // A card again (the customer gave a new one): the first dunning retry charges it and the failure is gone.
    await db().nativeUpdate(Subscription, { id }, { cardToken: 'sim-card-accept-saved-again' });
    h.clock.set(new Date(trialEnd.getTime() + 5 * DAY));
    const retry = await h.run({ actor: cliActor() });
    expect(retry).toMatchObject({ charged: 1, renewal_failures: [], errors: [] });
    expect(await customerView(user, id)).toMatchObject({ status: 'active', last_renewal_failure: null });
    expect(await auditOf(id)).toHaveLength(1);
  });

  it('after a real partial chargeback (the gateway\'s notification forgets the card), the next renewal fails with payment_method_required', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeWithCard(user, 'basic-monthly');
    const [first] = await h.payments(id);
    expect(first).toMatchObject({ status: 'settled' });
    const simulator = h.server.running.billing.simulator!;
    // The card capture settles with the gateway's next daily batch; then the cardholder disputes part of it.
    expect(simulator.nextDay()).toContain(first!.orderId);
    await simulator.act(first!.orderId, 'partial_chargeback', { amount: 10000 });
    await expect.poll(async () => (await h.sub(id)).cardToken, { timeout: 10_000, interval: 50 }).toBeNull();

    h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
    const report = await h.run();
    expect(report.errors).toEqual([]);
    expect(failuresOf(report, id)).toEqual([expect.objectContaining({ subscription_id: id, code: 'payment_method_required' })]);
    expect(await customerView(user, id)).toMatchObject({ last_renewal_failure: { code: 'payment_method_required' } });
  });

  it('a declined saved card: card_declined with the bank\'s words, past due; each dunning retry updates it and the canceled subscription keeps why', async () => {
    const user = await h.server.createUser();
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const id = await subscribeWithCard(user, 'basic-monthly');
    await db().nativeUpdate(Subscription, { id }, { cardToken: 'sim-card-deny-saved' });
    const due = (await h.sub(id)).nextBillingDate!;

    h.clock.set(new Date(due.getTime() + 60_000));
    const first = await h.run({ actor: cliActor() });
    expect(first.errors).toEqual([]);
    expect(failuresOf(first, id)).toEqual([expect.objectContaining({ subscription_id: id, code: 'card_declined', message: expect.stringContaining('Do not honor') })]);
    const shown = await customerView(user, id);
    expect(shown.last_renewal_failure).toMatchObject({ code: 'card_declined', at: h.clock.now().toISOString() });
    expect(shown.last_renewal_failure.message).toContain('Deny by Bank');
    const [event] = await auditOf(id);
    expect(event).toMatchObject({ action: 'subscription.renewal_failed', actor: { type: 'cli' } });

    // The first dunning retry (a day after the due date) fails the same way: the record is its.
    h.clock.set(new Date(due.getTime() + 4 * DAY + 120_000));
    expect(failuresOf(await h.run(), id)).toEqual([expect.objectContaining({ code: 'card_declined' })]);
    // Far later dunning gives up; the reason stays.
    h.clock.set(new Date(due.getTime() + 30 * DAY));
    await h.run();
    const ended = await customerView(user, id);
    expect(ended).toMatchObject({ status: 'canceled', cancel_reason: 'dunning_exhausted', last_renewal_failure: { code: 'card_declined' } });
    expect(new Date(ended.last_renewal_failure.at).getTime()).toBeGreaterThan(due.getTime() + 60_000);
    const events = await auditOf(id);
    expect(events.length).toBeGreaterThan(1);
    expect(events.every((e) => e.action === 'subscription.renewal_failed')).toBe(true);
  });

  it('a wallet that does not cover the renewal: insufficient_funds', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.user();
    await h.fund(user, '50000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date(sub.nextBillingDate!.getTime() + 60_000));
    const report = await h.run();
    expect(report.renewal_failures).toEqual([expect.objectContaining({ subscription_id: sub.id, code: 'insufficient_funds', message: expect.stringContaining('does not cover 50000.00') })]);
    expect((await h.sub(sub.id)).lastRenewalFailure).toMatchObject({ code: 'insufficient_funds' });
  });

  it('the gateway refusing the charge (merchant side) is kept too, as gateway_error, and stays a run error', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeWithCard(user, 'basic-monthly');
    const faults = (body: unknown) => fetch(`${h.server.url}/_simulator/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    expect((await faults({ mode: 'refuse', operations: ['charge'], count: 1 })).status).toBe(200);
    try {
      h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
      const report = await h.run();
      expect(report.renewal_failures).toEqual([expect.objectContaining({ subscription_id: id, code: 'gateway_error', message: expect.stringContaining('402 Payment channel is not activated') })]);
      expect(report.errors).toEqual([expect.objectContaining({ subscription_id: id })]);
      expect(await customerView(user, id)).toMatchObject({ status: 'active', last_renewal_failure: { code: 'gateway_error' } });
    } finally {
      await faults({ mode: 'none' });
    }
  });

  /*
   * The renewal's invoice paid otherwise, and a renewal payment that fails later: the failure
   * follows what the gateway reports, not only the billing pass's own charge.
   */
  const act = async (orderId: string, action: string) => {
    const res = await h.server.request('POST', `/_simulator/v2/${orderId}/${action}`, {});
    expect(res.status, res.text).toBe(200);
  };
  const renewalPayment = async (id: string) => {
    const payments = await h.payments(id);
    const renewal = payments.filter((p) => p.invoice?.billingReason === 'subscription_cycle').at(-1);
    expect(renewal).toBeDefined();
    return renewal!;
  };
  const subscribeByTransfer = async (user: TestUser) => {
    const res = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bca' } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await act(res.body.payment.order_id, 'settle');
    expect(await customerView(user, res.body.subscription.id)).toMatchObject({ status: 'active' });
    return res.body.subscription.id as string;
  };

  it('a declined renewal the customer then pays by hand (POST /payments/charge/, settled): the failure is cleared with the renewal paid', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeWithCard(user, 'basic-monthly');
    await db().nativeUpdate(Subscription, { id }, { cardToken: 'sim-card-deny-saved' });
    h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
    expect(failuresOf(await h.run(), id)).toEqual([expect.objectContaining({ code: 'card_declined' })]);
    expect(await customerView(user, id)).toMatchObject({ status: 'past_due', last_renewal_failure: { code: 'card_declined' } });

    const paid = await h.server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: id, payment_type: 'qris' } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    // Pending is not paid: the failure still stands until the money arrives.
    expect(await customerView(user, id)).toMatchObject({ status: 'past_due', last_renewal_failure: { code: 'card_declined' } });
    await act(paid.body.payment.order_id, 'settle');
    expect(await customerView(user, id)).toMatchObject({ status: 'active', last_renewal_failure: null });
    expect((await staffView(id)).last_renewal_failure).toBeNull();
    expect((await auditOf(id)).map((e) => e.action)).toEqual(['subscription.renewal_failed']);
  });

  it('a declined renewal the customer pays by hand with a new card (its capture saves the card): cleared as well', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeWithCard(user, 'basic-monthly');
    await db().nativeUpdate(Subscription, { id }, { cardToken: 'sim-card-deny-saved' });
    h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
    expect(failuresOf(await h.run(), id)).toEqual([expect.objectContaining({ code: 'card_declined' })]);

    const paid = await h.server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: id, payment_type: 'credit_card', token: 'sim-card-accept-by-hand' } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    expect(await customerView(user, id)).toMatchObject({ status: 'active', last_renewal_failure: null });
    expect((await auditOf(id)).map((e) => e.action)).toEqual(['subscription.renewal_failed']);
  });

  it('a renewal by bank transfer left pending by the pass that expires unpaid: payment_expired, audited by the service, past due; paid later, cleared', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeByTransfer(user);
    h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
    const report = await h.run();
    expect(failuresOf(report, id)).toEqual([]);
    const renewal = await renewalPayment(id);
    expect(renewal.status).toBe('pending');
    expect((await customerView(user, id)).last_renewal_failure).toBeNull();

    await act(renewal.orderId, 'expire');
    const shown = await customerView(user, id);
    expect(shown).toMatchObject({ status: 'past_due', last_renewal_failure: { code: 'payment_expired', at: h.clock.now().toISOString() } });
    expect(shown.last_renewal_failure.message).toContain(renewal.orderId);
    expect(await staffView(id)).toMatchObject({ last_renewal_failure: { code: 'payment_expired' } });
    const events = await auditOf(id);
    expect(events).toEqual([
      expect.objectContaining({
        action: 'subscription.renewal_failed',
        actor: expect.objectContaining({ type: 'system' }),
        reason: expect.stringContaining('payment_expired'),
        changes: { last_renewal_failure: [null, expect.objectContaining({ code: 'payment_expired' })] },
      }),
    ]);
    // The same notification again (a redelivery) records nothing more.
    await act(renewal.orderId, 'expire').catch(() => undefined);
    expect(await auditOf(id)).toHaveLength(1);

    const paid = await h.server.api('POST', '/payments/charge/', { auth: user, body: { subscription_id: id, payment_type: 'bank_transfer', metadata: { bank: 'bca' } } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    await act(paid.body.payment.order_id, 'settle');
    expect(await customerView(user, id)).toMatchObject({ status: 'active', last_renewal_failure: null });
  });

  it('a pending renewal payment the gateway denies: card_declined, with the gateway\'s words', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const id = await subscribeByTransfer(user);
    h.clock.set(new Date((await h.sub(id)).nextBillingDate!.getTime() + 60_000));
    await h.run();
    const renewal = await renewalPayment(id);
    expect(renewal.status).toBe('pending');
    await act(renewal.orderId, 'deny');
    expect(await customerView(user, id)).toMatchObject({ status: 'past_due', last_renewal_failure: { code: 'card_declined', message: expect.stringContaining('declined') } });
    expect((await auditOf(id)).map((e) => e.action)).toEqual(['subscription.renewal_failed']);
  });

  it('a first payment that expires is no renewal: no renewal failure kept', async () => {
    h.clock.set(new Date('2027-01-31T10:00:00.000Z'));
    const user = await h.server.createUser();
    const res = await h.server.api('POST', '/subscriptions/', { auth: user, body: { plan_id: 'basic-monthly', payment_type: 'bank_transfer', metadata: { bank: 'bca' } } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    await act(res.body.payment.order_id, 'expire');
    expect((await customerView(user, res.body.subscription.id)).last_renewal_failure).toBeNull();
    expect(await auditOf(res.body.subscription.id)).toEqual([]);
  });
});
