import type { EntityManager } from '@mikro-orm/knex';
import { describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { Invoice } from '../../src/db/entities/invoice.js';
import { createApiKey } from '../../src/services/api-keys/manage-api-keys.js';
import { cliActor } from '../../src/services/audit/actor.js';
import { runBilling } from '../../src/services/billing/run-billing.js';
import { DATABASES } from '../helpers/database.js';
import { activeSubscription, dbOf, fundWallet, serverOnClock, subscribe, type TestUser } from '../helpers/subscriptions.js';

const START = new Date('2026-05-04T03:00:00.000Z');

/*
 * A cancel at the period end is a decision the customer may take back until the period ends:
 * POST /subscriptions/{id}/undo-cancel/ keeps the subscription, which then renews as usual. Once
 * the period has ended the cancel has happened (409), even before a billing run has written it.
 */
describe.each(DATABASES)('undoing a cancel at the period end (%s)', { timeout: 120_000 }, (kind) => {
  const stage = serverOnClock(kind, START);

  const post = (id: string, action: string, body?: unknown, user: TestUser = stage.user) =>
    stage.server.api('POST', `/subscriptions/${id}/${action}/`, { auth: user, body });
  const billingRun = () => {
    const { billing } = stage.server.running;
    return runBilling({ em: billing.orm.em.fork() as EntityManager, config: billing.config, gateway: billing.gateway, clock: stage.clock });
  };
  /** An active subscription paid from the wallet, with money left for its renewal. */
  const walletSubscriber = async () => {
    await fundWallet(stage.server, stage.user, '100000.00');
    const { subscription } = await activeSubscription(stage.server, stage.user, 'basic-monthly', 'wallet');
    return subscription as { id: string; next_billing_date: string };
  };
  const renewals = (id: string) => dbOf(stage.server).count(Invoice, { subscription: id, billingReason: 'subscription_cycle' });

  it('takes the cancel back; a second undo answers 200 with the same state; the period end then renews it', async () => {
    const sub = await walletSubscriber();
    const canceled = await post(sub.id, 'cancel', { reason: 'too expensive' });
    expect(canceled.body).toMatchObject({ status: 'active', cancel_at_period_end: true, cancel_reason: 'too expensive' });

    stage.clock.advance(10 * 86_400_000);
    const undone = await post(sub.id, 'undo-cancel');
    expect(undone.status, undone.text).toBe(200);
    expect(undone.body).toMatchObject({ status: 'active', cancel_at_period_end: false, cancel_reason: null, canceled_at: null, next_billing_date: sub.next_billing_date });
    const again = await post(sub.id, 'undo-cancel');
    expect(again.status).toBe(200);
    expect({ ...again.body, updated_at: null }).toEqual({ ...undone.body, updated_at: null });

    stage.clock.set(new Date(sub.next_billing_date));
    await billingRun();
    const renewed = (await stage.server.api('GET', `/subscriptions/${sub.id}/`, { auth: stage.user })).body;
    expect(renewed).toMatchObject({ status: 'active', cancel_at_period_end: false, cycles_completed: 2 });
    expect(new Date(renewed.next_billing_date).getTime()).toBeGreaterThan(new Date(sub.next_billing_date).getTime());
    expect(await renewals(sub.id)).toBe(1);
  });

  it('answers 409 once the period has ended, before and after the billing run cancels it; nothing is renewed', async () => {
    const sub = await walletSubscriber();
    await post(sub.id, 'cancel', {});
    stage.clock.set(new Date(sub.next_billing_date));
    const late = await post(sub.id, 'undo-cancel');
    expect(late.status).toBe(409);
    expect(late.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(late.body).toMatchObject({ code: 'invalid_state' });
    expect(late.body.detail).toMatch(/ended on .+; it can no longer be kept/);
    expect((await stage.server.api('GET', `/subscriptions/${sub.id}/`, { auth: stage.user })).body).toMatchObject({ status: 'active', cancel_at_period_end: true });

    await billingRun();
    const after = await post(sub.id, 'undo-cancel');
    expect(after.status).toBe(409);
    expect(after.body).toMatchObject({ code: 'invalid_state', detail: 'This subscription is canceled; it can no longer be kept. Subscribe again.' });
    expect((await stage.server.api('GET', `/subscriptions/${sub.id}/`, { auth: stage.user })).body).toMatchObject({ status: 'canceled' });
    expect(await renewals(sub.id)).toBe(0);
  });

  it('a live subscription never set to cancel answers 200 unchanged; a pending or canceled-now one 409; another user\'s 404', async () => {
    const sub = await walletSubscriber();
    const before = (await stage.server.api('GET', `/subscriptions/${sub.id}/`, { auth: stage.user })).body;
    const unchanged = await post(sub.id, 'undo-cancel');
    expect(unchanged.status).toBe(200);
    expect(unchanged.body).toEqual(before);

    const stranger = await stage.server.createUser();
    expect((await post(sub.id, 'undo-cancel', undefined, stranger)).status).toBe(404);

    expect((await post(sub.id, 'cancel', { immediate: true })).body.status).toBe('canceled');
    expect((await post(sub.id, 'undo-cancel')).status).toBe(409);

    const pending = await subscribe(stage.server, stage.user, { plan_id: 'basic-monthly', payment_type: 'qris' });
    const refused = await post(pending.body.subscription.id, 'undo-cancel');
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'invalid_state', detail: 'Cannot undo cancel a subscription that is pending.' });
  });

  it('a trial set to cancel is kept, and its trial end bills the first period', async () => {
    const made = await subscribe(stage.server, stage.user, { plan_id: 'pro-trial', payment_type: 'gopay' });
    const id = made.body.subscription.id as string;
    expect((await post(id, 'cancel', {})).body).toMatchObject({ status: 'trialing', cancel_at_period_end: true });
    expect((await post(id, 'undo-cancel')).body).toMatchObject({ status: 'trialing', cancel_at_period_end: false });
    stage.clock.set(new Date(made.body.subscription.trial_end));
    await billingRun();
    expect(await renewals(id)).toBe(1);
    expect((await stage.server.api('GET', `/subscriptions/${id}/`, { auth: stage.user })).body.status).not.toBe('canceled');
  });

  it('a write key undoes it for the customer the Billing-Customer header names, and the audit trail says so', async () => {
    const { billing } = stage.server.running;
    const key = (await createApiKey({ em: billing.orm.em.fork(), config: billing.config, clock: billing.clock }, cliActor(), { name: 'shop-backend', scope: 'write' })).key;
    const sub = await walletSubscriber();
    await post(sub.id, 'cancel', {});
    const res = await stage.server.api('POST', `/subscriptions/${sub.id}/undo-cancel/`, { headers: { authorization: `Bearer ${key}`, 'billing-customer': stage.user.id } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.cancel_at_period_end).toBe(false);
    const events = await dbOf(stage.server).find(AuditEvent, { targetId: stage.user.id, action: 'on_behalf.undoCancelSubscription' });
    expect(events).toHaveLength(1);
    expect(events[0]!.changes.resource).toEqual([null, sub.id]);

    // Staff on their own route: the same rule, one audit event with the reason; a no-op records nothing.
    await post(sub.id, 'cancel', {});
    const staff = (reason: string) => stage.server.api('POST', `/admin/subscriptions/${sub.id}/undo-cancel/`, { headers: { authorization: `Bearer ${key}` }, body: { reason } });
    expect((await staff('Ticket 9: stays after all')).body).toMatchObject({ status: 'active', cancel_at_period_end: false, user: { id: stage.user.id } });
    expect((await staff('again')).status).toBe(200);
    const audited = await dbOf(stage.server).find(AuditEvent, { targetId: sub.id, action: 'subscription.undo_cancel' });
    expect(audited.map((e) => [e.reason, e.changes.cancel_at_period_end])).toEqual([['Ticket 9: stays after all', [true, false]]]);
  });
});
