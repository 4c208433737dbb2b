import type { Config } from '../../config.js';
import { addDays } from '../../domain/billing-calendar.js';
import { renewalDueAt } from '../../domain/paid-access.js';

/** Days before a trial ends that the `trial_will_end` notification is sent (once). */
export const TRIAL_NOTICE_DAYS = 3;

/**
 * NOTE: a renewal payment that was committed but never answered by the gateway (the process
 * died between the commit and the charge) is looked at again this long after it was made: by
 * then a run that is still alive has long had its answer, so asking the gateway and, when it
 * never heard of the order, charging it now cannot double up with a live run.
 */
export const RESUBMIT_AFTER_MS = 10 * 60 * 1000;

/** When each step of collecting a renewal invoice falls due (docs/billing.md, Dunning). */
export interface DunningSchedule {
  /** Unpaid at this instant, the subscription becomes `past_due`. */
  dueAt: Date;
  /** A new collection attempt at each of these instants. */
  retryAt: Date[];
  /** Still unpaid at this instant: `canceled` (dunning_exhausted), invoice `uncollectible`. */
  cancelAt: Date;
}

/**
 * NOTE: the schedule counts from the instant the invoice was issued (its created_at): due
 * RENEWAL_DUE_DAYS later, retried DUNNING_RETRY_DAYS days after that due instant, canceled one
 * day after the last retry (default: due +3 days, retries +1, +3, +7, cancel +8).
 */
export function dunningSchedule(issuedAt: Date, config: Pick<Config, 'renewalDueDays' | 'dunningRetryDays'>): DunningSchedule {
  const dueAt = renewalDueAt(issuedAt, config.renewalDueDays);
  const days = [...config.dunningRetryDays].sort((a, b) => a - b);
  return {
    dueAt,
    retryAt: days.map((d) => addDays(dueAt, d)),
    cancelAt: addDays(dueAt, (days.at(-1) ?? 0) + 1),
  };
}

/** How many retries are due by `at`. */
export function retriesDueBy(schedule: DunningSchedule, at: Date): number {
  return schedule.retryAt.filter((t) => t.getTime() <= at.getTime()).length;
}

/** The next instant the invoice needs looking at, after `retriesDone` retries were made. */
export function nextDunningStep(schedule: DunningSchedule, at: Date, retriesDone: number): Date {
  if (at.getTime() < schedule.dueAt.getTime()) return schedule.dueAt;
  return schedule.retryAt[retriesDone] ?? schedule.cancelAt;
}
