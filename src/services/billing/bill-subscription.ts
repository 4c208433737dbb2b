import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Payment } from '../../db/entities/payment.js';
import type { Plan } from '../../db/entities/plan.js';
import { Subscription, type RenewalFailure } from '../../db/entities/subscription.js';
import { isPostgres } from '../../db/dialect.js';
import { Invoice } from '../../db/entities/invoice.js';
import { boundaryAfter } from '../../domain/billing-calendar.js';
import { invoiceStates } from '../../domain/states/invoice-states.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { GatewayError, isMerchantSideFailure, merchantSideFailure } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { discountCoversNewPeriod } from '../../domain/discount.js';
import { createInvoice, type CreateInvoiceInput, type InvoiceLineInput } from '../invoices/create-invoice.js';
import { countDiscountPeriod, periodLine } from '../invoices/subscription-lines.js';
import { notify } from '../notifications/notify.js';
import { subscriptionData } from '../notifications/payloads.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { retryingTransaction } from '../common/retrying-transaction.js';
import { cancelAtGateway, endSubscriptionNow } from '../subscription-rules/end-subscription.js';
import { usageLines } from '../usage/usage-charges.js';
import { closeUsageWindow, issueUsageInvoice, renewalUsageWindow } from '../subscription-rules/usage-invoice.js';
import { collectUsageInvoices } from '../subscriptions/collect-usage-invoices.js';
import { syncSubscriptionPayments } from '../subscriptions/sync-subscription.js';
import { dueAction, openRenewalInvoice, type DueAction } from './billing-actions.js';
import { collectInvoice, followUp, latestAttempt, markPastDue, nothingAfter, renewalSubmitOptions, type AfterCommit, type Counts } from './collect-renewal.js';
import type { UsageCollection } from '../subscriptions/collect-usage-invoices.js';
import { dunningSchedule, nextDunningStep, RESUBMIT_AFTER_MS, retriesDueBy } from './dunning-schedule.js';
import { declinedCharge, failureOfGatewayError } from '../subscription-rules/record-renewal-failure.js';

export type StepAction = DueAction['kind'] | 'locked_elsewhere' | 'already_invoiced';

/** What one step did (or, in a dry run, would do) to one subscription. */
export interface StepResult {
  subscriptionId: string;
  action: StepAction;
  counts: Counts;
  invoiceNumber: string | null;
  /** The payment made by this step, once the gateway answered: settled, pending, failed… */
  paymentStatus: string | null;
  /** The run's own failure at this subscription (exit 1): a database error, a gateway that is down. */
  error: string | null;
  /**
   * NOTE: what happened to the customer's payment when it did not go through (declined, no saved
   * card, the gateway's answer lost): a business outcome shown in the table, not a failure of
   * the run (docs/billing.md).
   */
  outcome?: string | null;
  after: AfterCommit;
  /** The subscription's status when the step committed. */
  status: string;
  /** Whether another step may be due at the same instant (a subscription catching up on cycles). */
  more: boolean;
  /** The renewal invoice the step worked on (internal: decides `more` without another query). */
  invoice?: Invoice | null;
  /** The total of the invoice the step issued or collected, null when it touched none. */
  amount?: string | null;
  /** Dry run: what the gateway's answer decides, which the dry run cannot know (null when nothing). */
  awaitsGateway?: string | null;
  /** Why the step's renewal charge failed (kept on the subscription by the run); null when it did not. */
  renewalFailure?: RenewalFailure | null;
  /** The step's renewal charge was paid: an earlier failure no longer stands. */
  renewalPaid?: boolean;
}

const POPULATE = ['plan', 'pendingPlan', 'user'] as const;

/**
 * The subscription, locked for this transaction; null when another billing run holds it.
 * NOTE: PostgreSQL takes FOR UPDATE SKIP LOCKED so that parallel runs split the work instead of
 * queueing; SQLite has a single writer, which serialises runs by itself.
 */
async function claim(em: EntityManager, id: string): Promise<Subscription | null> {
  const postgres = isPostgres(em);
  // SQLite: write first, so the transaction queues for the write lock (busy_timeout) instead of
  // reading a snapshot it could not upgrade later ("database is locked" beside another run).
  if (!postgres) await em.execute('update subscriptions set id = id where id = ?', [id], 'run');
  const sub = await em.findOne(Subscription, { id }, postgres ? { lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE } : {});
  if (sub) await em.populate(sub, POPULATE);
  return sub;
}

export function result(sub: { id: string; status: string }, action: StepAction, fields: Partial<StepResult> = {}): StepResult {
  return { subscriptionId: sub.id, action, counts: {}, invoiceNumber: null, paymentStatus: null, error: null, after: nothingAfter(), status: sub.status, more: false, ...fields };
}

/** A scheduled plan takes effect at renewal; a new interval starts a new billing grid at the renewal. */
function applyScheduledPlan(ctx: DataContext, sub: Subscription, plan: Plan, periodStart: Date): void {
  const old = sub.plan;
  if (old.interval !== plan.interval || old.intervalUnit !== plan.intervalUnit) sub.billingAnchor = periodStart;
  sub.plan = plan;
  sub.pendingPlan = null;
  // A plan not priced per unit has one unit: fewer units asked for on the old plan go with it.
  if (!plan.perUnit) {
    sub.quantity = 1;
    sub.pendingQuantity = null;
  }
  notify(ctx, sub.user, 'subscription_plan_changed', { ...subscriptionData(sub), old_plan_name: old.name, plan_name: plan.name, applied_at_renewal: true });
}

/**
 * NOTE: a renewal invoice pays for the period that starts where the current one ends and ends
 * at the next boundary of the billing anchor; it is due RENEWAL_DUE_DAYS after it is issued.
 * A trial's first invoice is the same thing: the trial is the current period, the anchor its end.
 * It also bills, in arrears, the usage of the period that ends (`usage`: the lines of
 * renewalUsageWindow under the plan that period had; never discounted).
 * Shared by renew() and the batched run (batch-renewal.ts), so both bill the same thing.
 */
export function renewalInvoiceInput(
  ctx: Pick<DataContext, 'config'>,
  sub: Subscription,
  at: Date,
  usage: InvoiceLineInput[] = [],
): CreateInvoiceInput & { periodStart: Date; periodEnd: Date } {
  const plan = sub.plan;
  const periodStart = sub.currentPeriodEnd ?? sub.nextBillingDate!;
  const periodEnd = boundaryAfter(sub.billingAnchor ?? periodStart, plan.interval, plan.intervalUnit, periodStart);
  const schedule = dunningSchedule(at, ctx.config);
  return {
    user: sub.user,
    subscription: sub,
    currency: plan.currency,
    billingReason: 'subscription_cycle',
    taxBehavior: plan.taxBehavior,
    issuedAt: at,
    dueAt: schedule.dueAt,
    periodStart,
    periodEnd,
    discount: discountCoversNewPeriod(sub.discount, plan, periodStart) ? sub.discount : null,
    lines: [periodLine(plan, sub.quantity, periodStart, periodEnd), ...usage],
  };
}

async function renew(ctx: DataContext, sub: Subscription, planChange: Plan | null): Promise<StepResult> {
  const at = ctx.clock.now();
  const counts: Counts = { renewed: 1 };
  if (sub.status === 'trialing') counts.trial_ended = 1;
  // The period that ends is billed its usage under the plan it had, before a scheduled change applies.
  const window = renewalUsageWindow(sub);
  const usage = await usageLines(ctx, sub, sub.plan, window.from, window.to);
  closeUsageWindow(sub, window.to);
  if (planChange) {
    applyScheduledPlan(ctx, sub, planChange, sub.currentPeriodEnd ?? sub.nextBillingDate!);
    counts.plan_changes = 1;
  }
  if (sub.pendingQuantity !== null) {
    // Fewer units asked for at the period's end take effect with the period they were asked for.
    sub.quantity = sub.pendingQuantity;
    sub.pendingQuantity = null;
  }
  const input = renewalInvoiceInput(ctx, sub, at, usage);
  const invoice = await createInvoice(ctx, input);
  countDiscountPeriod(sub, input);
  invoice.nextRetryAt = input.dueAt;
  // The unique (subscription, billing_reason, period_start) constraint answers here.
  await ctx.em.flush();
  const collection = await collectInvoice(ctx, sub, invoice, input.dueAt);
  for (const [k, v] of Object.entries(collection.counts)) counts[k as keyof Counts] = (counts[k as keyof Counts] ?? 0) + v;
  return result(sub, 'renew', { counts, invoiceNumber: invoice.number, outcome: collection.outcome, after: collection.after, invoice, renewalFailure: collection.failure ?? null, renewalPaid: collection.paid ?? false });
}

/**
 * Dunning of an open renewal invoice at `at`: past due after the due instant, a new attempt at
 * each retry instant, and one day after the last retry the subscription is canceled
 * (dunning_exhausted) and the invoice uncollectible. Between retries it only re-attempts what
 * never reached the gateway.
 */
async function collect(ctx: DataContext, sub: Subscription, invoice: Invoice): Promise<StepResult> {
  const at = ctx.clock.now();
  const schedule = dunningSchedule(invoice.createdAt, ctx.config);
  const latest = await latestAttempt(ctx, invoice);
  if (latest?.status === 'failed' && isMerchantSideFailure(latest.failureReason)) {
    // docs/billing.md, Dunning: a wrong server key or a gateway outage is not the customer's failure. No
    // dunning step is taken on it (no past_due, no retry counted, no cancellation): the charge
    // is only made again, and the schedule resumes once an attempt reaches the customer.
    const collection = await collectInvoice(ctx, sub, invoice, nextDunningStep(schedule, at, invoice.retryCount));
    return result(sub, 'collect', { counts: collection.counts, invoiceNumber: invoice.number, outcome: collection.outcome, after: collection.after, invoice, renewalFailure: collection.failure ?? null, renewalPaid: collection.paid ?? false });
  }
  if (at.getTime() >= schedule.cancelAt.getTime()) {
    invoiceStates.apply(invoice, 'mark_uncollectible', at);
    invoice.nextRetryAt = null;
    const cancelOrderIds = await endSubscriptionNow(ctx, sub, 'dunning_exhausted');
    const usage = await collectUsageInvoices(ctx, sub, at);
    return result(sub, 'collect', { counts: { canceled: 1 }, invoiceNumber: invoice.number, after: { ...nothingAfter(), cancelOrderIds, submit: usageSubmit(usage) }, outcome: usage.outcome });
  }
  const counts: Counts = {};
  if (at.getTime() >= schedule.dueAt.getTime() && markPastDue(ctx, sub, at)) counts.past_due = 1;
  const retries = retriesDueBy(schedule, at);
  const retry = retries > invoice.retryCount;
  const next = retry ? null : followUp(latest, at);
  if (retry) invoice.retryCount = retries;
  invoice.nextRetryAt = nextDunningStep(schedule, at, invoice.retryCount);
  if (retry || next === 'reattempt') {
    if (retry) counts.retried = 1;
    const collection = await collectInvoice(ctx, sub, invoice, invoice.nextRetryAt);
    for (const [k, v] of Object.entries(collection.counts)) counts[k as keyof Counts] = (counts[k as keyof Counts] ?? 0) + v;
    return result(sub, 'collect', { counts, invoiceNumber: invoice.number, outcome: collection.outcome, after: collection.after, invoice, renewalFailure: collection.failure ?? null, renewalPaid: collection.paid ?? false });
  }
  if (next === 'resubmit') {
    // Looked at again later should the gateway still not answer; a live answer makes that a no-op.
    const recheck = new Date(at.getTime() + RESUBMIT_AFTER_MS);
    if (recheck.getTime() < invoice.nextRetryAt.getTime()) invoice.nextRetryAt = recheck;
    return result(sub, 'collect', { counts, invoiceNumber: invoice.number, after: { ...nothingAfter(), resubmit: { subscriptionId: sub.id, invoiceId: invoice.id } } });
  }
  if (next === 'wait') {
    const latest = await ctx.em.findOneOrFail(Payment, { invoice, status: 'pending' }, { orderBy: { createdAt: 'desc' } });
    const recheck = new Date(latest.createdAt.getTime() + RESUBMIT_AFTER_MS);
    if (recheck.getTime() < invoice.nextRetryAt.getTime()) invoice.nextRetryAt = recheck;
  }
  return result(sub, 'collect', { counts, invoiceNumber: invoice.number, invoice });
}

/** The last paid cycle ended: the subscription expires, its period's usage billed on a usage-only invoice. */
async function expire(ctx: DataContext, sub: Subscription): Promise<StepResult> {
  const at = ctx.clock.now();
  const periodEnd = renewalUsageWindow(sub).to;
  subscriptionStates.apply(sub, 'expire', at);
  sub.nextBillingDate = null;
  sub.cancelAtPeriodEnd = false;
  notify(ctx, sub.user, 'subscription_expired', { ...subscriptionData(sub), cycles_completed: sub.cyclesCompleted });
  await issueUsageInvoice(ctx, sub, sub.plan, periodEnd);
  return usageStep(ctx, sub, 'expire', { expired: 1 }, []);
}

/** The usage payment a step sends after its commit (one usage invoice at most per step). */
function usageSubmit(usage: UsageCollection): AfterCommit['submit'] {
  const [first] = usage.submits;
  return first ? { paymentId: first.paymentId, invoiceId: usage.invoices[0].id, options: first.options } : null;
}

/** A step that ended a subscription: its last usage invoice collected (a wallet now, another payment after the commit). */
async function usageStep(ctx: DataContext, sub: Subscription, action: StepAction, counts: Counts, cancelOrderIds: string[]): Promise<StepResult> {
  const usage = await collectUsageInvoices(ctx, sub, ctx.clock.now());
  const invoice = usage.invoices[0] ?? null;
  return result(sub, action, {
    counts: usage.paid > 0 ? { ...counts, charged: usage.paid } : counts,
    invoiceNumber: invoice?.number ?? null,
    outcome: usage.outcome,
    after: { ...nothingAfter(), cancelOrderIds, submit: usageSubmit(usage) },
    invoice,
  });
}

async function act(ctx: DataContext, sub: Subscription, action: DueAction): Promise<StepResult> {
  const at = ctx.clock.now();
  switch (action.kind) {
    case 'cancel_at_period_end': {
      // The user's own reason (given when they asked) stays; the open renewal invoice, if any, is
      // voided; then the period's usage is billed on its own invoice.
      const periodEnd = renewalUsageWindow(sub).to;
      const cancelOrderIds = await endSubscriptionNow(ctx, sub, sub.cancelReason, periodEnd);
      return usageStep(ctx, sub, action.kind, { canceled: 1 }, cancelOrderIds);
    }
    case 'expire':
      return expire(ctx, sub);
    case 'plan_change_blocked':
      return result(sub, action.kind, { error: action.message });
    case 'renew':
      return renew(ctx, sub, action.planChange);
    case 'collect':
      return collect(ctx, sub, action.invoice);
    case 'trial_notice':
      sub.trialWillEndNotifiedAt = at;
      notify(ctx, sub.user, 'trial_will_end', subscriptionData(sub));
      return result(sub, action.kind, { counts: { trial_notices: 1 } });
  }
}

/** The step of a subscription another billing run holds: it does whatever is due there. */
export function lockedElsewhere(id: string): StepResult {
  return result({ id, status: '' }, 'locked_elsewhere');
}

/**
 * The step inside the caller's transaction `em`: claim, decide (dueAction), act. Shared by the
 * real step and the dry run's rehearsal, so both decide and write the same.
 */
async function stepIn(ctx: ServiceContext, em: EntityManager, id: string): Promise<StepResult | null> {
  const tctx = { ...ctx, em };
  const sub = await claim(em, id);
  if (!sub) {
    const exists = await em.fork({ keepTransactionContext: true }).count(Subscription, { id });
    return exists ? lockedElsewhere(id) : null;
  }
  const due = { at: ctx.clock.now(), usageGraceMinutes: ctx.config.usageGraceMinutes };
  const action = dueAction(sub, await openRenewalInvoice(em, sub), due);
  if (!action) return null;
  const step = await act(tctx, sub, action);
  // Decided from what the step just wrote, to spare a catching-up subscription a lookup per
  // cycle; a gateway answer may still change things, so those always look again.
  const open = step.invoice?.status === 'open' ? step.invoice : null;
  step.more = step.after.submit !== null || step.after.resubmit !== null || dueAction(sub, open, due) !== null;
  step.amount = step.invoice?.totalAmount ?? null;
  step.invoice = undefined;
  return step;
}

/**
 * One step of billing one subscription at the context's clock, in one transaction: the first
 * thing due (cancel at period end, expire, renew, dunning, trial notice), or null when nothing
 * is. A crash leaves either all of the step or none of it. Gateway calls come afterwards, in
 * finishStep.
 */
export async function billSubscriptionStep(ctx: ServiceContext, id: string): Promise<StepResult | null> {
  try {
    // Retried from the start when chosen as a deadlock victim (a webhook locks a payment, then
    // its subscription; a step locks the subscription, then its payments).
    return await retryingTransaction(ctx.em, (em) => stepIn(ctx, em, id));
  } catch (err) {
    // Another run invoiced this period between our look and our insert: nothing to do here.
    if (err instanceof UniqueConstraintViolationException && /invoices_subscription_period_unique/.test(err.message)) {
      return result({ id, status: '' }, 'already_invoiced');
    }
    throw err;
  }
}

/**
 * The dry run's step: the very same step, written inside the caller's transaction (a savepoint
 * of it, so a failing step leaves the others usable) that the caller rolls back at the end.
 * Nothing goes to the gateway: a step that would charge there says so in `awaitsGateway`.
 */
export async function rehearseStep(ctx: ServiceContext, id: string): Promise<StepResult | null> {
  const step = await ctx.em.fork({ keepTransactionContext: true }).transactional((em: EntityManager) => stepIn(ctx, em, id));
  if (step) step.awaitsGateway = awaitedAnswer(step);
  return step;
}

/**
 * NOTE: what only the gateway's answer can tell, said instead of guessed: whether a charge
 * settles, waits for the customer or is declined (and so the payment's status, the
 * subscription's status after it, and whether a subscription behind by more than one cycle
 * renews again at once).
 */
function awaitedAnswer(step: StepResult): string | null {
  const { after } = step;
  if (after.submit) {
    const type = after.submit.options.merchantInitiated ? 'saved card' : 'payment';
    return `the gateway's answer to this ${type} charge of ${step.amount ?? 'the invoice'} decides the payment status, the subscription status and any further step`;
  }
  if (after.resubmit) {
    return "a renewal payment the gateway never answered: the gateway's status of it decides whether it is charged again";
  }
  return null;
}

const DECLINES: readonly string[] = ['denied_token'];

/** Re-checks past_due after a declined charge (applyGatewayEvent may see a same-instant payment as newer). */
async function pastDueAfterDecline(ctx: ServiceContext, subscriptionId: string): Promise<boolean> {
  return ctx.em.fork().transactional(async (em) => {
    const sub = await em.findOneOrFail(Subscription, subscriptionId, { populate: POPULATE });
    const open = await em.count(Invoice, { subscription: sub, billingReason: 'subscription_cycle', status: 'open' });
    return open > 0 && markPastDue({ ...ctx, em }, sub, ctx.clock.now());
  });
}

/**
 * The gateway half of a step, after its commit: cancels superseded payments, sends the new
 * payment (the answer is applied through the same path as every charge) and classifies the
 * outcome. A gateway that is down leaves the invoice to be re-attempted by the next run.
 */
export async function finishStep(ctx: ServiceContext, step: StepResult): Promise<void> {
  const { after } = step;
  await cancelAtGateway(ctx, after.cancelOrderIds);
  const counts = step.counts;
  const bump = (k: keyof Counts) => (counts[k] = (counts[k] ?? 0) + 1);

  if (after.resubmit) {
    const synced = await syncSubscriptionPayments(ctx, after.resubmit.subscriptionId);
    for (const lost of synced.filter((r) => r.outcome === 'unknown_at_gateway')) {
      const em = ctx.em.fork();
      const payment = await em.findOne(Payment, { orderId: lost.order_id, invoice: after.resubmit.invoiceId }, { populate: ['invoice'] });
      const sub = await em.findOneOrFail(Subscription, after.resubmit.subscriptionId);
      if (payment?.invoice) {
        const schedule = dunningSchedule(payment.invoice.createdAt, ctx.config);
        const until = nextDunningStep(schedule, ctx.clock.now(), payment.invoice.retryCount);
        after.submit = { paymentId: payment.id, invoiceId: after.resubmit.invoiceId, options: renewalSubmitOptions(sub, ctx.clock.now(), until) };
      }
    }
  }
  if (!after.submit) return;

  const { paymentId, invoiceId, options } = after.submit;
  let declined = false;
  try {
    await submitPayment(ctx, paymentId, options);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    declined = DECLINES.includes(err.kind);
    if (merchantSideFailure(err)) bump('merchant_failed');
    // A declined card is the customer's outcome. A gateway that is down, or whose answer was
    // lost (the payment stays pending for sync), is the run's failure: the operator must know.
    if (declined) step.outcome = `gateway ${err.kind}: ${err.message}`;
    else step.error = `gateway ${err.kind}: ${err.message}`;
    // An answer lost on the way back is no failure yet: the sync that follows tells.
    if (!err.outcomeUnknown) step.renewalFailure = failureOfGatewayError(ctx.clock.now(), err);
    if (!err.outcomeUnknown && !declined) {
      // The gateway never took the charge: the next run makes a new attempt.
      await ctx.em.fork().transactional(async (em) => {
        const invoice = await em.findOne(Invoice, { id: invoiceId, status: 'open' });
        if (invoice) invoice.nextRetryAt = ctx.clock.now();
      });
    }
  }
  const payment = await ctx.em.fork().findOneOrFail(Payment, paymentId);
  step.paymentStatus = payment.status;
  if (payment.status === 'settled') bump('charged');
  else if (payment.status === 'pending') bump('pending');
  else bump('failed');
  if (payment.status === 'settled') step.renewalPaid = true;
  else if (payment.status === 'failed' && !step.renewalFailure) step.renewalFailure = await declinedCharge(ctx, payment.orderId, ctx.clock.now());
  if (payment.status === 'failed' && (declined || payment.gatewayStatus !== null) && (await pastDueAfterDecline(ctx, step.subscriptionId))) bump('past_due');
  const sub = await ctx.em.fork().findOneOrFail(Subscription, step.subscriptionId);
  if (sub.status === 'past_due' && step.status !== 'past_due' && !counts.past_due) bump('past_due');
  step.status = sub.status;
}
