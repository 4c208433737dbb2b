import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Subscription } from '../../../src/db/entities/subscription.js';
import { archivePlan } from '../../../src/services/plans/archive-plan.js';
import { cancelSubscription } from '../../../src/services/subscriptions/cancel-subscription.js';
import { changeSubscriptionPlan } from '../../../src/services/subscriptions/change-subscription-plan.js';
import { pauseSubscription } from '../../../src/services/subscriptions/pause-subscription.js';
import { resumeSubscription } from '../../../src/services/subscriptions/resume-subscription.js';
import { DATABASES } from '../../helpers/database.js';
import { DAY, iso, planBySlug, startBilling, type BillingHarness } from '../../helpers/billing.js';

describe.each(DATABASES)('billing run: subscription lifecycle (%s)', (kind) => {
  let h: BillingHarness;
  beforeEach(async () => {
    h = await startBilling(kind);
  });
  afterEach(async () => {
    await h.stop();
  });

  it('trial: trial_will_end 3 days before (once), then the first invoice for trial end .. next boundary, paid from the wallet', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'pro-trial', 'wallet');
    expect(sub.status).toBe('trialing');
    expect(iso(sub.trialEnd)).toBe('2027-02-14T10:00:00.000Z');

    h.clock.set(new Date('2027-02-11T09:59:59.000Z'));
    expect((await h.run()).trial_notices).toBe(0);
    h.clock.set(new Date('2027-02-11T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ trial_notices: 1, renewed: 0 });
    h.clock.set(new Date('2027-02-12T10:00:00.000Z'));
    expect((await h.run()).trial_notices).toBe(0);
    expect((await h.notifications(user)).filter((n) => n === 'trial_will_end')).toHaveLength(1);

    h.clock.set(new Date('2027-02-14T10:00:00.000Z'));
    const report = await h.run();
    expect(report).toMatchObject({ renewed: 1, trial_ended: 1, charged: 1, errors: [] });
    const active = await h.sub(sub.id);
    expect(active.status).toBe('active');
    expect(iso(active.currentPeriodStart)).toBe('2027-02-14T10:00:00.000Z');
    expect(iso(active.currentPeriodEnd)).toBe('2027-03-14T10:00:00.000Z');
    expect(active.cyclesCompleted).toBe(1);
    const [invoice] = await h.invoices(sub.id);
    expect(invoice).toMatchObject({ billingReason: 'subscription_cycle', status: 'paid', totalAmount: '150000.00' });
    expect(iso(invoice.periodStart)).toBe('2027-02-14T10:00:00.000Z');
    expect(iso(invoice.periodEnd)).toBe('2027-03-14T10:00:00.000Z');
    expect(await h.notifications(user)).toContain('subscription_activated');
  });

  it('trial: a run after the trial ended bills it without a late "will end" notice', async () => {
    const user = await h.user();
    const sub = await h.subscribe(user, 'pro-trial', 'bank_transfer');
    h.clock.set(new Date('2027-02-20T00:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 1, trial_ended: 1, pending: 1, trial_notices: 0 });
    expect((await h.sub(sub.id)).status).toBe('trialing'); // until the invoice falls due
    expect(await h.notifications(user)).not.toContain('trial_will_end');
  });

  it('cancel_at_period_end: canceled at the period end with the user\'s reason, nothing invoiced', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    await cancelSubscription(h.ctx(), user, sub.id, { immediate: false, reason: 'too expensive' });
    h.clock.set(new Date('2027-02-28T09:00:00.000Z'));
    expect((await h.run()).canceled).toBe(0);
    expect((await h.sub(sub.id)).status).toBe('active');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ canceled: 1, renewed: 0 });
    const ended = await h.sub(sub.id);
    expect(ended).toMatchObject({ status: 'canceled', cancelReason: 'too expensive', cancelAtPeriodEnd: false, nextBillingDate: null });
    expect(await h.invoices(sub.id)).toHaveLength(1);
    expect((await h.notifications(user)).at(-1)).toBe('subscription_canceled');
  });

  it('max_cycles: expired at the end of the last paid cycle (a catch-up run renews twice, then expires)', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'three-cycles', 'wallet');
    h.clock.set(new Date('2028-01-01T00:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 2, charged: 2, expired: 1 });
    const ended = await h.sub(sub.id);
    expect(ended).toMatchObject({ status: 'expired', cyclesCompleted: 3, nextBillingDate: null });
    expect(iso(ended.currentPeriodEnd)).toBe('2027-04-30T10:00:00.000Z');
    expect(await h.invoices(sub.id)).toHaveLength(3);
    expect(await h.balance(user)).toBe('410000.00');
    expect(await h.notifications(user)).toContain('subscription_expired');
    expect((await h.run()).subscriptions).toBe(0);
  });

  it('pending_plan: the renewal invoice uses the new plan, and a new interval starts its own grid', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    await changeSubscriptionPlan(h.ctx(), user, sub.id, { planId: 'weekly', immediate: false });
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 1, plan_changes: 1, charged: 1 });
    const moved = await h.sub(sub.id);
    expect(moved.plan.slug).toBe('weekly');
    expect(moved.pendingPlan).toBeNull();
    expect(iso(moved.currentPeriodEnd)).toBe('2027-03-07T10:00:00.000Z');
    const renewal = (await h.invoices(sub.id))[1];
    expect(renewal.totalAmount).toBe('20000.00');
    expect(renewal.lines.getItems()[0].description).toContain('Weekly');
    expect(await h.notifications(user)).toContain('subscription_plan_changed');

    h.clock.set(new Date('2027-03-07T10:00:00.000Z'));
    expect((await h.run()).renewed).toBe(1);
    expect(iso((await h.sub(sub.id)).currentPeriodEnd)).toBe('2027-03-14T10:00:00.000Z');
  });

  it('pending_plan in another currency: skipped with a clear error, subscription left as is, run after run', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    const usd = await planBySlug(h, 'usd-monthly');
    await h.server.running.billing.orm.em.fork().nativeUpdate(Subscription, { id: sub.id }, { pendingPlan: usd.id });
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    for (let i = 0; i < 2; i += 1) {
      const report = await h.run();
      expect(report).toMatchObject({ renewed: 0 });
      expect(report.errors).toEqual([{ subscription_id: sub.id, message: expect.stringContaining('usd-monthly is priced in USD') }]);
    }
    const same = await h.sub(sub.id);
    expect(same).toMatchObject({ status: 'active', cyclesCompleted: 1 });
    expect(same.plan.slug).toBe('basic-monthly');
    expect(same.pendingPlan?.slug).toBe('usd-monthly');
    expect(await h.invoices(sub.id)).toHaveLength(1);
  });

  it('paused subscriptions are not billed; resume moves the next billing date by the time paused', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-10T10:00:00.000Z'));
    await pauseSubscription(h.ctx(), user, sub.id);
    h.clock.set(new Date('2027-03-20T10:00:00.000Z'));
    expect((await h.run()).subscriptions).toBe(0);
    await resumeSubscription(h.ctx(), user, sub.id);
    const resumed = await h.sub(sub.id);
    expect(iso(resumed.nextBillingDate)).toBe(new Date(new Date('2027-02-28T10:00:00.000Z').getTime() + 38 * DAY).toISOString());
    expect((await h.run()).renewed).toBe(0);
    h.clock.set(resumed.nextBillingDate!);
    expect(await h.run()).toMatchObject({ renewed: 1, charged: 1 });
  });

  it('a plan archived under a live subscription keeps being billed', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    await archivePlan(h.ctx(), 'basic-monthly');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    expect(await h.run()).toMatchObject({ renewed: 1, charged: 1, errors: [] });
    expect((await h.sub(sub.id)).cyclesCompleted).toBe(2);
  });

  it('a dry run reports what is due and writes nothing', async () => {
    const user = await h.user();
    await h.fund(user, '500000');
    const sub = await h.subscribe(user, 'basic-monthly', 'wallet');
    h.clock.set(new Date('2027-02-28T10:00:00.000Z'));
    const report = await h.run({ dryRun: true });
    expect(report).toMatchObject({ dry_run: true, subscriptions: 1, renewed: 1 });
    expect(report.actions).toEqual([expect.objectContaining({ subscription_id: sub.id, action: 'renew' })]);
    expect(await h.invoices(sub.id)).toHaveLength(1);
    expect(await h.balance(user)).toBe('450000.00');
  });
});
