import { Refund, type Payment } from '../../db/entities/payment.js';
import { PeriodFund } from '../../db/entities/period-fund.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { add, compare, isPositive, minimum, subtract, ZERO, type Money } from '../../domain/money.js';
import { unusedShare } from '../../domain/unused-share.js';
import type { DataContext } from '../context.js';

/*
 * What each payment paid for, as rows of PeriodFund: the one home of "credit never exceeds what
 * was paid" and "a refund gives back at most what is unused". A settled payment funds the
 * period it bought; a plan change closes the rows running at the change and carries or credits
 * their unused part; a refund takes its amount out of the payment's unused part.
 */

export interface UnusedPart {
  payment: Payment;
  unused: Money;
}

/** Records that `amount` of `payment` pays for [start, end) of the subscription. */
export function fundPeriod(ctx: DataContext, input: { subscription: Subscription; payment: Payment; amount: Money; start: Date; end: Date }): void {
  if (!isPositive(input.amount) || input.end.getTime() <= input.start.getTime()) return;
  ctx.em.create(PeriodFund, {
    subscription: input.subscription,
    payment: input.payment,
    amount: input.amount,
    periodStart: input.start,
    periodEnd: input.end,
    createdAt: ctx.clock.now(),
  } as PeriodFund);
}

async function runningFunds(ctx: DataContext, where: { subscription: Subscription } | { payment: Payment }, at: Date): Promise<PeriodFund[]> {
  const rows = await ctx.em.find(PeriodFund, { ...where, periodEnd: { $gt: at } }, { orderBy: { createdAt: 'asc', id: 'asc' }, populate: ['payment'] });
  // Oldest payment first: a plan change carries the oldest money into the new period and
  // credits the newest (undoing an upgrade gives back the upgrade's own payment).
  return rows.filter((r) => isPositive(r.amount)).sort((a, b) => a.payment.createdAt.getTime() - b.payment.createdAt.getTime());
}

const share = (row: PeriodFund, at: Date): Money => unusedShare(row.amount, row.periodStart, row.periodEnd, at, row.payment.currency);

/**
 * The unused share, at `at`, of what was paid for the subscription's service, less what refunds
 * still waiting for the gateway hold of it: nothing for a trial or an unpaid period.
 */
export async function unusedCredit(ctx: DataContext, sub: Subscription, at: Date): Promise<Money> {
  const held = new PendingRefunds(ctx);
  let credit = ZERO;
  for (const row of await runningFunds(ctx, { subscription: sub }, at)) {
    const unused = share(row, at);
    credit = add(credit, subtract(unused, await held.take(row.payment, unused)));
  }
  return credit;
}

/**
 * NOTE: a refund waiting for the gateway (its answer was lost) holds its amount of the payment's
 * unused funds: the gateway may already have paid it out. Neither a plan change's credit nor
 * the new period may use that money; the refund takes it when it is accepted (withdrawFunds),
 * and if it fails the money funds the period it was moved to. `take` hands out what is still
 * held, payment by payment, once.
 */
class PendingRefunds {
  /** Per payment: what its pending refunds still hold here, and all its refunds but failed ones. */
  private readonly refunds = new Map<string, { left: Money; held: Money }>();
  constructor(private readonly ctx: DataContext) {}

  private async of(payment: Payment): Promise<{ left: Money; held: Money }> {
    let known = this.refunds.get(payment.id);
    if (!known) {
      // One read per payment serves both take() and creditable().
      const rows = await this.ctx.em.find(Refund, { payment, status: { $ne: 'failed' } }, { fields: ['amount', 'status'] });
      const sum = (list: Pick<Refund, 'amount'>[]) => list.reduce((total, r) => add(total, r.amount), ZERO);
      known = { left: sum(rows.filter((r) => r.status === 'pending')), held: sum(rows) };
      this.refunds.set(payment.id, known);
    }
    return known;
  }

  async take(payment: Payment, upTo: Money): Promise<Money> {
    const known = await this.of(payment);
    const taken = minimum(known.left, upTo);
    known.left = subtract(known.left, taken);
    return isPositive(taken) ? taken : ZERO;
  }

  /**
   * What of a payment may still be credited to the wallet: what it brought in, less its refunds
   * (pending ones too, as refundLimit holds them), its credits so far and what was charged back.
   */
  async creditable(payment: Payment): Promise<Money> {
    const free = subtract(payment.grossAmount, add((await this.of(payment)).held, payment.creditedAmount, payment.chargebackAmount));
    return isPositive(free) ? free : ZERO;
  }
}

/** The unused share, at `at`, of what one payment paid for. */
export async function unusedOfPayment(ctx: DataContext, payment: Payment, at: Date): Promise<Money> {
  return (await runningFunds(ctx, { payment }, at)).reduce((sum, row) => add(sum, share(row, at)), ZERO);
}

/** Ends a row at `at`: it keeps what was used; returns the unused part it gave up. */
function closeRow(row: PeriodFund, at: Date): Money {
  const unused = share(row, at);
  row.amount = subtract(row.amount, unused);
  row.periodEnd = at.getTime() > row.periodStart.getTime() ? at : row.periodStart;
  return unused;
}

/**
 * A plan change at `at`: every running row of the subscription is closed, and its unused part
 * either pays for the new period [start, end) (up to `carry`, the new plan's cost) or is
 * credited, counted on the payment it came from. Returns the amount credited (for the wallet)
 * and its parts per payment (for their credit notes).
 */
export async function moveFundsToNewPeriod(
  ctx: DataContext,
  sub: Subscription,
  at: Date,
  carry: Money,
  start: Date,
  end: Date,
): Promise<{ credited: Money; parts: UnusedPart[] }> {
  let toCarry = carry;
  let credited = ZERO;
  const parts: UnusedPart[] = [];
  const held = new PendingRefunds(ctx);
  for (const row of await runningFunds(ctx, { subscription: sub }, at)) {
    const unused = closeRow(row, at);
    // What a pending refund holds moves with the period, used for nothing (PendingRefunds).
    const reserved = await held.take(row.payment, unused);
    const free = subtract(unused, reserved);
    const carried = compare(toCarry, ZERO) > 0 ? minimum(free, toCarry) : ZERO;
    toCarry = subtract(toCarry, carried);
    // Never more than the payment still holds (a safety bound: refunds and credits so far).
    const rest = minimum(subtract(free, carried), await held.creditable(row.payment));
    fundPeriod(ctx, { subscription: sub, payment: row.payment, amount: subtract(unused, rest), start, end });
    if (isPositive(rest)) {
      row.payment.creditedAmount = add(row.payment.creditedAmount, rest);
      credited = add(credited, rest);
      const part = parts.find((p) => p.payment === row.payment);
      if (part) part.unused = add(part.unused, rest);
      else parts.push({ payment: row.payment, unused: rest });
    }
  }
  return { credited, parts };
}

/**
 * A refund of `amount` from a payment at `at`: taken out of the payment's unused funds (the
 * time it still pays for). Staff may refund beyond the unused part; that excess paid for time
 * already used and leaves the rows as they are. Returns the amount taken from unused funds.
 */
export async function withdrawFunds(ctx: DataContext, payment: Payment, amount: Money, at: Date): Promise<Money> {
  let left = amount;
  for (const row of await runningFunds(ctx, { payment }, at)) {
    if (!isPositive(left)) break;
    const start = at.getTime() > row.periodStart.getTime() ? at : row.periodStart;
    const end = row.periodEnd;
    const unused = closeRow(row, at);
    const taken = minimum(unused, left);
    left = subtract(left, taken);
    fundPeriod(ctx, { subscription: row.subscription, payment: row.payment, amount: subtract(unused, taken), start, end });
  }
  return subtract(amount, left);
}

/**
 * A resume after a pause: the paused time was not used, so what was unused when the pause began
 * pays for the same length of service from the resume on (the period moved later by as much).
 */
export async function shiftFundsPastPause(ctx: DataContext, sub: Subscription, pausedAt: Date, resumedAt: Date): Promise<void> {
  const pausedFor = resumedAt.getTime() - pausedAt.getTime();
  if (pausedFor <= 0) return;
  for (const row of await runningFunds(ctx, { subscription: sub }, pausedAt)) {
    const start = row.periodStart.getTime() > pausedAt.getTime() ? new Date(row.periodStart.getTime() + pausedFor) : resumedAt;
    const end = new Date(row.periodEnd.getTime() + pausedFor);
    const unused = closeRow(row, pausedAt);
    fundPeriod(ctx, { subscription: sub, payment: row.payment, amount: unused, start, end });
  }
}
