import type { Refund } from '../db/entities/payment.js';
import { add, ZERO, type Money } from './money.js';

/**
 * What succeeded refunds add up to (optionally only those `which` picks): the one sum behind a
 * payment's refunded amount, used by the refund totals (services/refunds) and by the refund
 * credit notes (services/credit-notes), which must agree. Pure, so both folders can import it.
 * Callers that sum while confirming refunds call it again after each.
 */
export function succeededTotal<R extends Pick<Refund, 'status' | 'amount'>>(refunds: readonly R[], which: (r: R) => boolean = () => true): Money {
  return refunds.filter((r) => r.status === 'succeeded' && which(r)).reduce((sum, r) => add(sum, r.amount), ZERO);
}
