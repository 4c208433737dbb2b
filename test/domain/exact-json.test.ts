import { describe, expect, it } from 'vitest';
import { parseJsonExact } from '../../src/domain/exact-json.js';

describe('parseJsonExact', () => {
  it('keeps numbers a double holds exactly as numbers', () => {
    expect(parseJsonExact('{"a": 20000, "b": 20000.5, "c": -0.1, "d": 2e4, "e": [1, 2.25], "f": 0}')).toEqual({ a: 20000, b: 20000.5, c: -0.1, d: 20000, e: [1, 2.25], f: 0 });
  });

  it('hands on a number a double would change as its exact text', () => {
    expect(parseJsonExact('{"amount": 20000.000000000001}')).toEqual({ amount: '20000.000000000001' });
    expect(parseJsonExact('[12345678901234567890, 1e400, 0.30000000000000001]')).toEqual(['12345678901234567890', '1e400', '0.30000000000000001']);
  });

  it('hands on a number with zeros past its cents as its text: 50.000 is fifty thousand to an Indonesian eye, never quietly fifty', () => {
    expect(parseJsonExact('{"a": 50.000, "b": 1.500, "c": 150000.00, "d": 2.25, "e": 1.1250}')).toEqual({ a: '50.000', b: '1.500', c: 150000, d: 2.25, e: '1.1250' });
  });

  it('leaves strings alone, escaped quotes and digits in them included', () => {
    expect(parseJsonExact('{"x": "a\\"1.000000000000000001\\"", "y": 1.000000000000000001}')).toEqual({ x: 'a"1.000000000000000001"', y: '1.000000000000000001' });
  });

  it('throws on what JSON.parse refuses', () => {
    expect(() => parseJsonExact('{"a": 01}')).toThrow(SyntaxError);
    expect(() => parseJsonExact('{"a": }')).toThrow(SyntaxError);
  });
});
