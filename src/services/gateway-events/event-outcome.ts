import { DomainError } from '../../domain/errors.js';
import { add, compare, isDecimalText, isPositive, money } from '../../domain/money.js';
import type { GatewayEvent } from './gateway-event.js';

export interface EventOutcome {
  /** What changed, for the webhook log and the CLI; empty when the event changed nothing. */
  changes: string[];
}

/** Raised when an event cannot be applied (amount mismatch); the webhook logs it `failed`. Unknown orders: UnknownOrderError. */
export class GatewayEventError extends DomainError {
  constructor(message: string) {
    super('conflict', message);
  }
}

/**
 * NOTE: money is exact or refused: the notified gross_amount must equal the local amount as a
 * decimal, digit for digit, so "150000.001" does not settle a 150000.00 payment (rounding it to
 * the currency's precision first would). The webhook answers 503 and its log says why.
 * The one exception is Midtrans' Automatic Fee Imposition (docs/gateway.md, 'How the simulator behaves'): the
 * customer paid a fee on top, and the event says so in
 * `metadata.extra_info.gross_amount_info`; it is accepted only when the original amount is ours
 * and gross_amount is exactly ours plus the fee. Returns the customer's fee ("0.00" without one).
 */
export function assertAmount(event: GatewayEvent, expected: string): string {
  if (event.grossAmount === null) return money(0);
  if (!isDecimalText(event.grossAmount)) throw new GatewayEventError(`gross_amount "${event.grossAmount}" is not a decimal number.`);
  if (compare(event.grossAmount, expected) === 0) return money(0);
  const fee = imposedFee(event, expected);
  if (fee === null) throw new GatewayEventError(`gross_amount ${event.grossAmount} does not match the local amount ${expected}.`);
  return fee;
}

/** The fee of an Automatic Fee Imposition that accounts exactly for gross_amount beyond `expected`, else null. */
function imposedFee(event: GatewayEvent, expected: string): string | null {
  const metadata = event.raw['metadata'];
  const extra = metadata !== null && typeof metadata === 'object' ? (metadata as Record<string, unknown>)['extra_info'] : null;
  const info = extra !== null && typeof extra === 'object' ? (extra as Record<string, unknown>)['gross_amount_info'] : null;
  if (info === null || typeof info !== 'object' || event.grossAmount === null) return null;
  const text = (v: unknown) => (typeof v === 'number' && Number.isSafeInteger(v) ? String(v) : typeof v === 'string' && isDecimalText(v) ? v : null);
  const { original_amount: original, gross_amount: gross, customer_imposed_payment_fee: fee } = Object.fromEntries(
    ['original_amount', 'gross_amount', 'customer_imposed_payment_fee'].map((k) => [k, text((info as Record<string, unknown>)[k])]),
  ) as Record<string, string | null>;
  if (original === null || gross === null || fee === null || !isPositive(fee)) return null;
  const exact = compare(original, expected) === 0 && compare(gross, event.grossAmount) === 0 && compare(add(expected, fee), event.grossAmount) === 0;
  return exact ? money(fee) : null;
}
