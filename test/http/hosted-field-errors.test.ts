import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { FieldError } from '../../src/domain/errors.js';
import { fieldErrorText, formFieldErrors } from '../../src/http/hosted/field-errors.js';
import { translator } from '../../src/http/hosted/language.js';
import type { DataContext } from '../../src/services/context.js';
import { checkTopupAmount } from '../../src/services/topups/create-topup.js';

/*
 * The pages' words for a rule's field errors are matched to the rule's own messages: each
 * message the top-up rule can give is fed through, so a rule reworded without its page words
 * fails here instead of showing a customer "This entry is not valid.".
 */
const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'sqlite::memory:', SESSION_SECRET: 'x' });
const ctx = { config, clock: new ManualClock(new Date()) } as unknown as DataContext;
const ruleErrors = (raw: unknown): FieldError[] => {
  const errors: FieldError[] = [];
  checkTopupAmount(ctx, raw, 'topup_amount', errors);
  return errors;
};

describe('field errors in the page\'s words (src/http/hosted/field-errors.ts)', () => {
  it.each<[unknown, string, string]>([
    ['5000', 'Jumlah paling sedikit Rp\u00a010.000.', 'The amount must be at least Rp\u00a010.000.'],
    ['60000000', 'Jumlah paling banyak Rp\u00a050.000.000.', 'The amount can be at most Rp\u00a050.000.000.'],
    ['0', 'Jumlah harus lebih dari nol.', 'The amount must be more than zero.'],
    ['100000.5', 'Tulis jumlah dalam rupiah penuh, tanpa sen.', 'Write the amount in whole rupiah, without cents.'],
    ['100000.123', 'Tulis jumlah dalam rupiah penuh, tanpa sen.', 'Write the amount in whole rupiah, without cents.'],
    ['seratus', 'Tulis jumlah dengan angka, misalnya 100.000.', 'Write the amount in figures, for example 100,000.'],
    [{}, 'Tulis jumlah dengan angka, misalnya 100.000.', 'Write the amount in figures, for example 100,000.'],
    ['1'.repeat(25), 'Tulis jumlah dengan angka, misalnya 100.000.', 'Write the amount in figures, for example 100,000.'],
  ])('the top-up rule on %j reads as words in both languages', (raw, id, en) => {
    const errors = ruleErrors(raw);
    expect(errors).toHaveLength(1);
    expect(fieldErrorText(translator('id'), errors[0]!)).toBe(id);
    expect(fieldErrorText(translator('en'), errors[0]!)).toBe(en);
    expect(formFieldErrors(translator('id'), errors, { topup_amount: 'amount' })).toEqual({ amount: id });
  });

  it('an error of a field the form does not hold is no field error; an unknown rule reads plainly', () => {
    expect(formFieldErrors(translator('id'), [{ field: 'success_url', message: 'must be an absolute URL' }], { topup_amount: 'amount' })).toBeNull();
    expect(fieldErrorText(translator('en'), { field: 'x', message: 'something new' })).toBe('This entry is not valid.');
  });
});
