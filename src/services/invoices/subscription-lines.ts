import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { isoDate } from '../../domain/billing-calendar.js';
import { afterCoveredPeriod } from '../../domain/discount.js';
import type { CreateInvoiceInput, InvoiceLineInput } from './create-invoice.js';

/** The line of one period of `plan`: its price × the subscription's units, covered by a discount. */
export function periodLine(plan: Plan, quantity: number, periodStart: Date | null, periodEnd: Date | null): InvoiceLineInput {
  const dates = periodStart && periodEnd ? { start: isoDate(periodStart), end: isoDate(periodEnd) } : null;
  return {
    description: dates ? `${plan.name} (${dates.start} to ${dates.end})` : plan.name,
    subject: dates ? { type: 'period', plan: plan.name, ...dates } : null,
    kind: 'subscription',
    quantity: plan.perUnit ? quantity : 1,
    unitAmount: plan.price,
    periodStart,
    periodEnd,
    discounted: true,
  };
}

/** The subscription's discount once the invoice of `input` is issued: one covered period fewer. */
export function countDiscountPeriod(sub: Subscription, input: Pick<CreateInvoiceInput, 'discount'> & { periodEnd: Date }): void {
  if (input.discount && sub.discount) sub.discount = afterCoveredPeriod(sub.discount, input.periodEnd);
}

