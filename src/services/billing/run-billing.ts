import { isPostgres } from '../../db/dialect.js';
import type { ServiceContext } from '../context.js';
import { heldElsewhere, renewPlainWalletBatch } from './batch-renewal.js';
import { dueSubscriptionIds } from './billing-actions.js';
import { billSubscriptionStep, finishStep, lockedElsewhere, type StepAction, type StepResult } from './bill-subscription.js';
import type { BillingCounter } from './collect-renewal.js';
import { notifyExpiringCards } from './notify-expiring-cards.js';
import { cancelWithdrawnOrders } from '../subscription-rules/withdrawn-orders.js';

export interface BillingRunOptions {
  /** The run's time (default: the context's clock now). Everything due at or before it is done. */
  at?: Date;
  /** At most this many subscriptions. */
  limit?: number;
  /** Report what would happen; write nothing and call no gateway. */
  dryRun?: boolean;
  /** Subscriptions fetched per page (the largest page, when pages are renewed in batches). */
  chunkSize?: number;
  /**
   * Renew plain wallet-paid subscriptions a page at a time (batch-renewal.ts); default true.
   * false bills every subscription on its own, the path the batch must match row for row.
   */
  batch?: boolean;
  /** Called when a page's batch failed and its subscriptions were billed one by one instead. */
  onBatchFallback?: (error: unknown) => void;
  /**
   * Called after each subscription looked at: `seen` of about `total` (what was due when the run
   * began, within --limit; counted only when this callback is given), `processed` of them had
   * something due.
   */
  onProgress?: (progress: { processed: number; seen: number; total: number; report: BillingRunReport }) => void;
}

export interface BillingRunAction {
  subscription_id: string;
  action: StepAction | 'error';
  invoice_number: string | null;
  payment_status: string | null;
  status: string;
  error: string | null;
}

export type BillingRunReport = {
  at: string;
  dry_run: boolean;
  /** Subscriptions that had something due. */
  subscriptions: number;
  errors: { subscription_id: string; message: string }[];
  actions: BillingRunAction[];
} & Record<BillingCounter, number>;

export const COUNTERS: readonly BillingCounter[] = [
  'renewed',
  'charged',
  'pending',
  'failed',
  'merchant_failed',
  'retried',
  'past_due',
  'canceled',
  'expired',
  'trial_ended',
  'trial_notices',
  'card_notices',
  'plan_changes',
];

/** Steps per subscription and run: a subscription years behind catches up, a bug cannot spin forever. */
const MAX_STEPS = 500;

/**
 * Pages of a batched run start this small and double up to chunkSize: a run shows progress
 * (and a failing batch) at once, and one stopped early has committed its first pages.
 */
const FIRST_BATCH_PAGE = 32;
const BATCH_PAGE = 1000;
const SINGLE_PAGE = 200;

function emptyReport(at: Date, dryRun: boolean): BillingRunReport {
  const counters = Object.fromEntries(COUNTERS.map((c) => [c, 0])) as Record<BillingCounter, number>;
  return { at: at.toISOString(), dry_run: dryRun, subscriptions: 0, ...counters, errors: [], actions: [] };
}

function record(report: BillingRunReport, step: StepResult): void {
  for (const [k, v] of Object.entries(step.counts)) report[k as BillingCounter] += v ?? 0;
  report.actions.push({
    subscription_id: step.subscriptionId,
    action: step.action,
    invoice_number: step.invoiceNumber,
    payment_status: step.paymentStatus,
    status: step.status,
    error: step.error ?? step.outcome ?? null,
  });
  if (step.error) report.errors.push({ subscription_id: step.subscriptionId, message: step.error });
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * One billing pass (DECISIONS §4, `billing-admin billing run`, the in-server scheduler): every
 * subscription with something due at `at` is brought up to date, one transaction per step,
 * each subscription as far as it goes (a run far in the future catches up on every missed
 * cycle and dunning step). A failure of one subscription is reported and does not stop the others.
 * Plain wallet renewals are done a page at a time in one transaction (batch-renewal.ts), writing
 * the same rows and reporting the same steps; every other subscription takes its own steps.
 */
export async function runBilling(ctx: ServiceContext, opts: BillingRunOptions = {}): Promise<BillingRunReport> {
  const at = opts.at ?? ctx.clock.now();
  // NOTE: the whole run happens "at" one instant: every use case below stamps its rows with it.
  const runCtx: ServiceContext = { ...ctx, clock: { now: () => new Date(at.getTime()) } };
  const dryRun = opts.dryRun ?? false;
  const report = emptyReport(at, dryRun);
  const batch = (opts.batch ?? true) && !dryRun;
  const largest = Math.max(1, opts.chunkSize ?? (batch ? BATCH_PAGE : SINGLE_PAGE));
  let page = batch ? Math.min(FIRST_BATCH_PAGE, largest) : largest;
  let afterId: string | null = null;
  // PostgreSQL: the next page's ids are looked up on another connection while this page is
  // billed (keyset after its last id, so what this page writes cannot change the answer; each is
  // checked again under its lock). Not under --limit, whose room is known only after the page.
  const prefetch = batch && opts.limit === undefined && isPostgres(ctx.em);
  let next: Promise<string[]> | null = null;
  report.card_notices = await notifyExpiringCards(runCtx, at, dryRun);
  // Orders withdrawn where the gateway could not be called (or whose cancel failed) are canceled now.
  if (!dryRun) await cancelWithdrawnOrders(runCtx);
  // For the progress display only: one more scan of what is due, before anything changes.
  let total = opts.onProgress ? (await dueSubscriptionIds(ctx.em.fork(), at, null, opts.limit ?? 1_000_000_000)).length : 0;
  let seen = 0;
  const progress = () => {
    seen += 1;
    total = Math.max(total, seen);
    opts.onProgress?.({ processed: report.subscriptions, seen, total, report });
  };

  for (;;) {
    const room = opts.limit === undefined ? Infinity : opts.limit - report.subscriptions;
    if (room <= 0) return report;
    // NOTE: a page no longer than the room left under --limit: a batch never renews a subscription the report would not count.
    const ids: string[] = await (next ?? dueSubscriptionIds(ctx.em.fork(), at, afterId, Math.min(page, room)));
    if (ids.length === 0) break;
    page = Math.min(page * 2, largest);
    if (prefetch) {
      next = dueSubscriptionIds(ctx.em.fork(), at, ids[ids.length - 1], page);
      // Awaited at the top of the next page; this only keeps a failure from going unhandled meanwhile.
      next.catch(() => undefined);
    }
    const batched = new Map<string, StepResult>();
    if (batch) {
      try {
        for (const step of await renewPlainWalletBatch(runCtx, ids)) batched.set(step.subscriptionId, step);
      } catch (err) {
        // Nothing of the batch was written: each subscription goes the per-subscription way.
        opts.onBatchFallback?.(err);
      }
      for (const id of await heldElsewhere(runCtx, ids.filter((i) => !batched.has(i)))) batched.set(id, lockedElsewhere(id));
    }
    for (const id of ids) {
      if (opts.limit !== undefined && report.subscriptions >= opts.limit) return report;
      const done = batched.get(id);
      if (done) {
        record(report, done);
        report.subscriptions += 1;
        progress();
        continue;
      }
      let stepped = false;
      for (let n = 0; n < MAX_STEPS; n += 1) {
        let step: StepResult | null;
        try {
          step = await billSubscriptionStep(runCtx, id, { dryRun });
        } catch (err) {
          // The step's transaction rolled back: nothing of it happened.
          report.errors.push({ subscription_id: id, message: messageOf(err) });
          report.actions.push({ subscription_id: id, action: 'error', invoice_number: null, payment_status: null, status: '', error: messageOf(err) });
          stepped = true;
          break;
        }
        if (!step) break;
        stepped = true;
        try {
          if (!dryRun) await finishStep(runCtx, step);
        } catch (err) {
          // The step committed; its gateway half failed and is picked up by a later run.
          step.error = messageOf(err);
        }
        record(report, step);
        // Stop at anything that cannot progress further at this instant.
        if (dryRun || step.error || !step.more) break;
      }
      if (stepped) report.subscriptions += 1;
      progress();
    }
    afterId = ids[ids.length - 1];
  }
  return report;
}
