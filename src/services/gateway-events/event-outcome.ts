import { DomainError } from '../../domain/errors.js';
import { compare, isDecimalText } from '../../domain/money.js';
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
 */
export function assertAmount(event: GatewayEvent, expected: string): void {
  if (event.grossAmount === null) return;
  if (!isDecimalText(event.grossAmount)) throw new GatewayEventError(`gross_amount "${event.grossAmount}" is not a decimal number.`);
  if (compare(event.grossAmount, expected) !== 0) {
    throw new GatewayEventError(`gross_amount ${event.grossAmount} does not match the local amount ${expected}.`);
  }
}
