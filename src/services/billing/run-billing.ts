import { rehearse } from '../common/rehearse.js';
import { eventStore } from '../usage/event-store.js';
import { isPostgres } from '../../db/dialect.js';
import type { ServiceContext } from '../context.js';
import type { EntityManager } from '@mikro-orm/knex';
import { heldElsewhere, rehearsePlainWalletBatch, renewPlainWalletBatch } from './batch-renewal.js';
import { dueSubscriptionIds } from './billing-actions.js';
import { billSubscriptionStep, finishStep, lockedElsewhere, rehearseStep, type StepAction, type StepResult } from './bill-subscription.js';
import type { BillingCounter } from './collect-renewal.js';
import { notifyExpiringCards } from './notify-expiring-cards.js';
import { cancelWithdrawnOrders } from '../subscription-rules/withdrawn-orders.js';
import { systemActor, type Actor } from '../audit/actor.js';
import { loggableMessage } from '../../db/loggable-error.js';
import { clearRenewalFailure, recordRenewalFailure } from '../subscription-rules/record-renewal-failure.js';

export interface BillingRunOptions {
  /** The run's time (default: the context's clock now). Everything due at or before it is done. */
  at?: Date;
  /** At most this many subscriptions. */
  limit?: number;
  /**
   * Report what would happen; write nothing and call no gateway. The run is rehearsed in one
   * transaction that is rolled back, so what depends only on the database is predicted exactly;
   * what the gateway's answer decides is said to be unknown (each action's `awaits_gateway`).
   */
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
  /** Who runs it, for the audit events of failed renewals: the CLI's operator, else the system. */
  actor?: Actor;
}

/** A renewal charge that failed in this run, and why (also kept on the subscription). */
export interface RenewalFailureLine {
  subscription_id: string;
  invoice_number: string | null;
  code: string;
  message: string;
}

export interface BillingRunAction {
  subscription_id: string;
  action: StepAction | 'error';
  invoice_number: string | null;
  /** The total of the invoice the step issued or collected. */
  amount: string | null;
  /** The step's payment once the gateway answered; null in a dry run when the gateway decides. */
  payment_status: string | null;
  /** The subscription's status after the step (in a dry run, before any gateway answer). */
  status: string;
  error: string | null;
  /** Dry run: what only the gateway's answer can tell about this step; null when nothing. */
  awaits_gateway: string | null;
}

export type BillingRunReport = {
  at: string;
  dry_run: boolean;
  /** Subscriptions that had something due. */
  subscriptions: number;
  /** Charges sent to the gateway (in a dry run: that would be sent, their answers unknown). */
  gateway_charges: number;
  errors: { subscription_id: string; message: string }[];
  /**
   * Every renewal charge that failed, with its reason: the customer's (a declined card, no saved
   * card, a short wallet) as well as the gateway's; only the latter are also `errors` (exit 1).
   */
  renewal_failures: RenewalFailureLine[];
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
  return { at: at.toISOString(), dry_run: dryRun, subscriptions: 0, gateway_charges: 0, ...counters, errors: [], renewal_failures: [], actions: [] };
}

function record(report: BillingRunReport, step: StepResult): void {
  for (const [k, v] of Object.entries(step.counts)) report[k as BillingCounter] += v ?? 0;
  report.actions.push({
    subscription_id: step.subscriptionId,
    action: step.action,
    invoice_number: step.invoiceNumber,
    amount: step.amount ?? null,
    payment_status: step.paymentStatus,
    status: step.status,
    error: step.error ?? step.outcome ?? null,
    awaits_gateway: step.awaitsGateway ?? null,
  });
  if (step.after.submit) report.gateway_charges += 1;
  if (step.error) report.errors.push({ subscription_id: step.subscriptionId, message: step.error });
  if (step.renewalFailure) {
    const { code, message } = step.renewalFailure;
    report.renewal_failures.push({ subscription_id: step.subscriptionId, invoice_number: step.invoiceNumber, code, message });
  }
}

/** What the step's charge left on the subscription: its failure (with an audit event), or none after a paid renewal. */
async function keepRenewalOutcome(ctx: ServiceContext, step: StepResult, actor: Actor): Promise<void> {
  if (step.renewalFailure) await recordRenewalFailure(ctx, step.subscriptionId, step.renewalFailure, actor);
  else if (step.renewalPaid) await clearRenewalFailure(ctx, step.subscriptionId);
}

// A driver's error without its statement: the report is printed and logged.
const messageOf = (err: unknown) => loggableMessage(err);

/**
 * One billing pass (docs/billing.md, `billing-admin billing run`, the in-server scheduler): every
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
  if (!opts.dryRun) {
    // A server that runs for months still has the usage events' partitions of the coming months
    // (made at start-up too; one catalog read when they exist).
    await eventStore.ensurePartitions(ctx.em.fork() as EntityManager, at);
    return pass(runCtx, at, opts, false);
  }
  // NOTE: a dry run is the same pass, rehearsed in one transaction that is rolled back: each
  // subscription sees what the ones before it would have done (a shared wallet, the next invoice
  // number), so its report is the real run's except where the gateway answers. While it runs
  // it holds the locks a run would take (on SQLite, the write lock: src/services/common/rehearse.ts).
  return rehearse(ctx.em as EntityManager, 'subscriptions', (tx) => pass({ ...runCtx, em: tx }, at, opts, true));
}

/** The billing pass at `at` (runCtx's clock); a dry run's runCtx.em is the transaction it rolls back. */
async function pass(runCtx: ServiceContext, at: Date, opts: BillingRunOptions, dryRun: boolean): Promise<BillingRunReport> {
  // A dry run's reads stay inside its transaction: they see what it rehearsed (and SQLite has one connection).
  const fork = (): EntityManager => (dryRun ? runCtx.em.fork({ keepTransactionContext: true }) : runCtx.em.fork()) as EntityManager;
  const report = emptyReport(at, dryRun);
  const due = { at, usageGraceMinutes: runCtx.config.usageGraceMinutes };
  const batch = opts.batch ?? true;
  const largest = Math.max(1, opts.chunkSize ?? (batch ? BATCH_PAGE : SINGLE_PAGE));
  let page = batch ? Math.min(FIRST_BATCH_PAGE, largest) : largest;
  let afterId: string | null = null;
  // PostgreSQL: the next page's ids are looked up on another connection while this page is
  // billed (keyset after its last id, so what this page writes cannot change the answer; each is
  // checked again under its lock). Not under --limit, whose room is known only after the page.
  // The next page's batch starts once this page's batch is writing (its rows built, its invoice
  // numbers reserved): this process prepares the next (reads, locks, builds its rows) while the
  // database writes this one, and it then waits for the invoice-number counter, held by this one
  // to its commit, so pages are numbered in turn. At most two batches are in flight.
  const prefetch = batch && !dryRun && opts.limit === undefined && isPostgres(runCtx.em);
  let ahead: Promise<Prepared> | null = null;
  report.card_notices = await notifyExpiringCards(runCtx, at, dryRun);
  // Orders withdrawn where the gateway could not be called (or whose cancel failed) are canceled now.
  if (!dryRun) await cancelWithdrawnOrders(runCtx);
  // For the progress display only: one more scan of what is due, before anything changes.
  let total = opts.onProgress ? (await dueSubscriptionIds(fork(), due, null, opts.limit ?? 1_000_000_000)).length : 0;
  let seen = 0;
  const progress = () => {
    seen += 1;
    total = Math.max(total, seen);
    opts.onProgress?.({ processed: report.subscriptions, seen, total, report });
  };

  try {
    for (;;) {
      const room = opts.limit === undefined ? Infinity : opts.limit - report.subscriptions;
      if (room <= 0) return report;
      const prepared = await (ahead as Promise<Prepared> | null);
      ahead = null;
      // NOTE: a page no longer than the room left under --limit: a batch never renews a subscription the report would not count.
      const ids: string[] = prepared?.ids ?? (await dueSubscriptionIds(fork(), due, afterId, Math.min(page, room)));
      if (ids.length === 0) break;
      page = Math.min(page * 2, largest);
      const inFlight: InFlight | null = prepared?.inFlight ?? (batch ? startBatch(runCtx, ids, dryRun) : null);
      if (prefetch && inFlight) {
        const following = dueSubscriptionIds(runCtx.em.fork(), due, ids[ids.length - 1], page);
        ahead = Promise.all([following, inFlight.writing]).then(([nextIds]) => ({
          ids: nextIds,
          inFlight: nextIds.length > 0 ? startBatch(runCtx, nextIds, false) : null,
        }));
        // Awaited at the top of the next page; this only keeps a failure from going unhandled meanwhile.
        ahead.catch(() => undefined);
      }
      const batched = new Map<string, StepResult>();
      if (inFlight) {
        try {
          const steps = await inFlight.steps;
          for (const step of steps) batched.set(step.subscriptionId, step);
        } catch (err) {
          // Nothing of the batch was written: each subscription goes the per-subscription way.
          opts.onBatchFallback?.(err);
        }
        if (!dryRun) for (const id of await heldElsewhere(runCtx, ids.filter((i) => !batched.has(i)))) batched.set(id, lockedElsewhere(id));
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
            step = await (dryRun ? rehearseStep(runCtx, id) : billSubscriptionStep(runCtx, id));
          } catch (err) {
            // The step's transaction rolled back: nothing of it happened.
            report.errors.push({ subscription_id: id, message: messageOf(err) });
            report.actions.push({ subscription_id: id, action: 'error', invoice_number: null, amount: null, payment_status: null, status: '', error: messageOf(err), awaits_gateway: null });
            stepped = true;
            break;
          }
          if (!step) break;
          stepped = true;
          try {
            if (!dryRun) {
              await finishStep(runCtx, step);
              await keepRenewalOutcome(runCtx, step, opts.actor ?? systemActor);
            }
          } catch (err) {
            // The step committed; its gateway half failed and is picked up by a later run.
            step.error = messageOf(err);
          }
          record(report, step);
          // Stop at anything that cannot progress further at this instant, and, in a dry run, at
          // a gateway answer it cannot know.
          if (step.error || !step.more || step.awaitsGateway) break;
        }
        if (stepped) report.subscriptions += 1;
        progress();
      }
      afterId = ids[ids.length - 1];
    }
  } finally {
    // A run that stops (--limit, a failure) leaves no batch of its own running behind it.
    const left = ahead as Promise<Prepared> | null;
    if (left) await left.then((p) => p.inFlight?.steps).catch(() => undefined);
  }
  return report;
}

/** The next page, its batch already started (null: nothing left to batch). */
interface Prepared {
  ids: string[];
  inFlight: InFlight | null;
}

/** A page's batch under way: its steps once it has committed, and the moment it began writing. */
interface InFlight {
  steps: Promise<StepResult[]>;
  writing: Promise<void>;
}

function startBatch(ctx: ServiceContext, ids: string[], dryRun: boolean): InFlight {
  let wrote = () => {};
  const writing = new Promise<void>((resolve) => (wrote = resolve));
  const steps = dryRun ? rehearsePlainWalletBatch(ctx, ids).finally(wrote) : renewPlainWalletBatch(ctx, ids, { onWriting: wrote });
  // Awaited by the page's turn in the loop; this only keeps a failure from going unhandled meanwhile.
  steps.catch(() => undefined);
  return { steps, writing };
}
