import type { FieldError, PromotionCodeRefusal } from '../../domain/errors.js';
import type { TypedAmountRefusal } from '../../domain/typed-amount.js';
import { pageFormat, type Translate } from './language.js';
import type { Messages } from './messages/id.js';

/*
 * A rule's field errors in the page's language. The use cases say what is wrong in English for
 * the API ("must be at least 10000.00 IDR"); a page says it in words next to the field, with
 * bounds as rupiah. Each rule the pages can meet maps to a catalogue key here; one it does not
 * know still reads as a sentence in the page's language, never as the API's text.
 */

/** Amounts as the pages show them ("Rp 10.000"): the same digits in either language. */
const rupiah = pageFormat('id', 'UTC').money;

interface Rule {
  pattern: RegExp;
  key: keyof Messages;
  vars?: (match: RegExpExecArray) => Record<string, string>;
}

const RULES: Rule[] = [
  { pattern: /^must be at least (\d+(?:\.\d+)?) ([A-Z]{3})$/, key: 'field.amount_min', vars: (m) => ({ amount: rupiah(m[1]!, m[2]!) }) },
  { pattern: /^must be at most (\d+(?:\.\d+)?) ([A-Z]{3})$/, key: 'field.amount_max', vars: (m) => ({ amount: rupiah(m[1]!, m[2]!) }) },
  { pattern: /^must be greater than zero$/, key: 'field.amount_positive' },
  { pattern: /^(may have at most two decimal places$|must be written (in whole|without) )/, key: 'field.amount_whole' },
  { pattern: /^must be a whole number from 1 to (\d+)$/, key: 'field.quantity_range', vars: (m) => ({ max: m[1]! }) },
  { pattern: /^(must be a decimal number|must be a number or a decimal string|must be a finite number|is out of range|is too long)$/, key: 'field.amount_not_a_number' },
];

/** One field error, as a sentence in the page's language. */
export function fieldErrorText(t: Translate, error: FieldError): string {
  for (const rule of RULES) {
    const match = rule.pattern.exec(error.message);
    if (match) return t(rule.key, rule.vars?.(match) ?? {});
  }
  return t('field.invalid');
}

/** Why a promotion code was refused, next to its field in the page's language. */
export function promotionCodeText(t: Translate, reason: PromotionCodeRefusal): string {
  return t(`promo.${reason}`);
}

/** Why a typed amount was refused, with an example written the page's way. */
export function typedAmountText(t: Translate, reason: TypedAmountRefusal): string {
  return t(`field.typed_${reason}`);
}

/**
 * The field errors of a refused form, by the form's own field names (`fields` maps a rule's
 * field, `topup_amount`, to the input that holds it, `amount`); null when none belongs to a field of this form.
 */
export function formFieldErrors(t: Translate, errors: readonly FieldError[], fields: Record<string, string>): Record<string, string> | null {
  const found: Record<string, string> = {};
  for (const error of errors) {
    const input = fields[error.field];
    if (!input) continue;
    found[input] = found[input] ? `${found[input]} ${fieldErrorText(t, error)}` : fieldErrorText(t, error);
  }
  return Object.keys(found).length > 0 ? found : null;
}
