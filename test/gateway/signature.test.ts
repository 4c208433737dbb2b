import { describe, expect, it } from 'vitest';
import { computeSignature, verifySignature } from '../../src/gateway/signature.js';

const KEY = 'SB-Mid-server-EXAMPLE-not-a-real-key';

// Worked examples of the notification signature (docs/gateway.md, 'Wire details'); the last row
// signs "150000" without its decimals, a different input.
const ROWS = [
  ['200', '150000.00', '430a01f4cb3c1c8b85fa532690882d15c8c5dd656df30bf38236199f66174f125afe090025e607f7dffcb804bf2524d73ebe9a95318aea5cc97dbd1143f318cf'],
  ['201', '150000.00', '0e533ded38a2f9f0b2527f3c9a4ab991c172c27fef95520935417175af2c3f5abdef18c80e46fcbe785e9c18743d948f5e295603afbc06f45c9874a1541984cd'],
  ['202', '150000.00', '31d672a3b800f2763474f3b24049b621ab79d65cb1e39610b6bf6b1e4a7f96000032b1b6355d6542700b6f29c666a6873367a3e022002b4f9db8d4c28a037ead'],
  ['200', '150000', '464abc1752f66ea159c8a06f43c1688c6f660373e16853fea9aa5bd2e69d82dfd570ded6dee32a805da021ab994cb1fe743146300fb5a3860a5f370c3aebd021'],
] as const;

const THIRD_PARTY = {
  order_id: 'ORDER-123456',
  status_code: '200',
  gross_amount: '10000',
  key: 'SB-Mid-server-xxxxxxxxxxxxxxxxxx',
  signature_key: '8d4bc63ef1b714c5aac25b173008b9b594698f1936bb1bc420cf96fbcf9ef74b9ece254c7b8354d1bd55e8c977c25d39995df85787372640db01566898fbc2cb',
};

describe('computeSignature', () => {
  it.each(ROWS)('matches the documented vector for status %s, amount %s', (statusCode, gross, expected) => {
    expect(computeSignature('INV-2024-0001', statusCode, gross, KEY)).toBe(expected);
  });

  it('matches the independent third-party vector', () => {
    const { order_id, status_code, gross_amount, key, signature_key } = THIRD_PARTY;
    expect(computeSignature(order_id, status_code, gross_amount, key)).toBe(signature_key);
  });

  it('uses the amount string verbatim, so "150000" and "150000.00" differ', () => {
    expect(computeSignature('INV-2024-0001', '200', '150000', KEY)).not.toBe(computeSignature('INV-2024-0001', '200', '150000.00', KEY));
  });
});

describe('verifySignature', () => {
  const payload = { order_id: 'INV-2024-0001', status_code: '200', gross_amount: '150000.00', signature_key: ROWS[0][2] };

  it.each(ROWS)('accepts the documented notification for status %s, amount %s', (status_code, gross_amount, signature_key) => {
    expect(verifySignature({ order_id: 'INV-2024-0001', status_code, gross_amount, signature_key }, KEY)).toBe(true);
  });

  it('accepts the third-party vector', () => {
    const { key, ...rest } = THIRD_PARTY;
    expect(verifySignature(rest, key)).toBe(true);
  });

  describe('when the payload was tampered with', () => {
    it.each([
      ['order_id', { order_id: 'INV-2024-0002' }],
      ['status_code', { status_code: '201' }],
      ['gross_amount', { gross_amount: '1500000.00' }],
      ['gross_amount without decimals', { gross_amount: '150000' }],
      ['signature in upper case', { signature_key: ROWS[0][2].toUpperCase() }],
      ['one flipped hex digit', { signature_key: ROWS[0][2].replace(/^4/, '5') }],
      ['truncated signature', { signature_key: ROWS[0][2].slice(0, 64) }],
      ['signature with trailing space', { signature_key: `${ROWS[0][2]} ` }],
    ])('rejects a changed %s', (_what, change) => {
      expect(verifySignature({ ...payload, ...change }, KEY)).toBe(false);
    });

    it('rejects the right payload checked with another server key', () => {
      expect(verifySignature(payload, 'SB-Mid-server-another-key')).toBe(false);
    });
  });

  describe('when fields are missing or not strings', () => {
    it.each([
      ['order_id', { order_id: undefined }],
      ['status_code', { status_code: undefined }],
      ['gross_amount', { gross_amount: undefined }],
      ['signature_key', { signature_key: undefined }],
      ['numeric status_code', { status_code: 200 }],
      ['numeric gross_amount', { gross_amount: 150000 }],
      ['null signature_key', { signature_key: null }],
      ['object signature_key', { signature_key: { toString: () => ROWS[0][2] } }],
    ])('returns false without throwing for %s', (_what, change) => {
      expect(verifySignature({ ...payload, ...change } as never, KEY)).toBe(false);
    });

    it('returns false for null, non-objects and an empty server key', () => {
      expect(verifySignature(null, KEY)).toBe(false);
      expect(verifySignature(undefined, KEY)).toBe(false);
      expect(verifySignature('not an object' as never, KEY)).toBe(false);
      expect(verifySignature(payload, '')).toBe(false);
    });

    it('handles multi-byte characters without throwing on unequal buffer lengths', () => {
      expect(verifySignature({ ...payload, signature_key: 'é'.repeat(128) }, KEY)).toBe(false);
    });
  });
});
