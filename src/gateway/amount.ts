import { GatewayError } from './errors.js';

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/**
 * Converts one of our decimal strings to the integer Midtrans wants. IDR has no minor unit at
 * Midtrans, so "150000.50" cannot be sent and must not be rounded silently.
 */
export function toGatewayInteger(value: string, currency: string, field: string): bigint {
  if (currency.toUpperCase() !== 'IDR') {
    throw new GatewayError('validation', `Currency ${currency} is not supported by the gateway`, {
      messages: [`${field}: only IDR is supported`],
    });
  }
  const m = typeof value === 'string' ? DECIMAL.exec(value.trim()) : null;
  if (!m) {
    throw new GatewayError('validation', `${field} is not a decimal amount`, { messages: [`${field} is not a decimal amount`] });
  }
  const [, whole = '0', fraction = ''] = m;
  if (/[1-9]/.test(fraction)) {
    throw new GatewayError('validation', `${field} has a fractional part, which IDR does not allow`, {
      messages: [`${field} must be a whole number of IDR`],
    });
  }
  return BigInt(whole);
}

/** JSON can carry the integer exactly only up to 2^53 - 1. */
export function toJsonInteger(value: bigint, field: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new GatewayError('validation', `${field} is too large`, { messages: [`${field} is too large`] });
  }
  return Number(value);
}
