import { describe, expect, it } from 'vitest';
import type { Refund } from '../../../src/db/entities/payment.js';
import { InvalidStateError } from '../../../src/domain/errors.js';
import { refundStates } from '../../../src/domain/states/refund-states.js';

const refund = (status: Refund['status']) => ({ status }) as Refund;
const at = new Date('2026-11-24T00:00:00Z');

describe('refund states', () => {
  it('a pending refund succeeds or fails once', () => {
    const r = refund('pending');
    refundStates.apply(r, 'succeed', at);
    expect(r.status).toBe('succeeded');
    expect(refundStates.applyIfAllowed(r, 'fail', at)).toBe(false);
    expect(r.status).toBe('succeeded');
  });

  it('when the gateway answer refused it, the answer alone never revives it', () => {
    const r = refund('failed');
    expect(refundStates.applyIfAllowed(r, 'succeed', at)).toBe(false);
    expect(() => refundStates.apply(r, 'succeed', at)).toThrow(InvalidStateError);
  });

  it('when the gateway lists it under its refund_key, it happened, even after a refusal', () => {
    const r = refund('failed');
    expect(refundStates.applyIfAllowed(r, 'confirm_at_gateway', at)).toBe(true);
    expect(r.status).toBe('succeeded');
    expect(refundStates.applyIfAllowed(r, 'confirm_at_gateway', at)).toBe(false);
  });
});
