import { money, type Money } from './money.js';

/*
 * NOTE: an amount a person types into a page is read strictly, in the page's language, and in
 * whole rupiah. Bahasa Indonesia groups thousands with dots ("100.000") and writes decimals
 * after a comma; English groups with commas ("100,000") and writes decimals after a dot. A
 * reader that drops every separator turns "100000.00" into ten million, so anything that is
 * not plainly a whole amount in the page's own writing is refused with a reason, never guessed.
 */

export type TypedAmountLanguage = 'id' | 'en';

/** Why a typed amount was refused: the page says it next to the field. */
export type TypedAmountRefusal =
  /** Nothing typed. */
  | 'empty'
  /** A minus sign: amounts typed here are always what is paid in. */
  | 'negative'
  /** A fraction of a rupiah, or the other language's decimal separator ("100000.00", "100.000,00"). */
  | 'decimal'
  /** Thousands separators in the wrong places ("1.0000", "10.00.000"), or both kinds mixed. */
  | 'grouping'
  /** Letters or signs that are no part of an amount. */
  | 'not_a_number'
  /** More digits than any amount could have. */
  | 'too_long';

export type TypedAmount = { ok: true; amount: Money } | { ok: false; reason: TypedAmountRefusal };

/** More than this many digits is no amount anybody pays (a quadrillion rupiah). */
const MAX_DIGITS = 15;

const SEPARATORS: Record<TypedAmountLanguage, { group: string; decimal: string }> = {
  id: { group: '.', decimal: ',' },
  en: { group: ',', decimal: '.' },
};

/** Spaces of every kind (a page's "Rp 100.000" may hold a no-break space), at either end or after "Rp". */
const SPACE = /[\s\u00a0\u202f]/g;

/**
 * Reads an amount typed in `lang`: digits alone ("100000"), or grouped by threes with the
 * language's thousands separator ("100.000" in Bahasa, "100,000" in English), optionally after
 * "Rp". Never a float: the digits become a decimal string ("100000.00").
 */
export function parseTypedAmount(text: string, lang: TypedAmountLanguage): TypedAmount {
  const refuse = (reason: TypedAmountRefusal): TypedAmount => ({ ok: false, reason });
  let rest = text.replace(SPACE, ' ').trim();
  rest = rest.replace(/^rp\.?\s*/i, '');
  if (rest === '') return refuse('empty');
  if (/^[-−–]/.test(rest)) return refuse('negative');
  if (!/^[0-9.,]+$/.test(rest)) return refuse('not_a_number');
  if (!/[0-9]/.test(rest)) return refuse('not_a_number');
  const { group, decimal } = SEPARATORS[lang];
  // One or two digits after the last separator of either kind read as cents whatever the language.
  if (rest.includes(decimal) || /[.,][0-9]{1,2}$/.test(rest)) return refuse('decimal');
  let digits: string;
  if (!rest.includes(group)) {
    digits = rest;
  } else {
    const groups = rest.split(group);
    const wellGrouped = /^[1-9][0-9]{0,2}$/.test(groups[0]!) && groups.slice(1).every((g) => /^[0-9]{3}$/.test(g));
    if (!wellGrouped) return refuse('grouping');
    digits = groups.join('');
  }
  const significant = digits.replace(/^0+(?=[0-9])/, '');
  if (significant.length > MAX_DIGITS) return refuse('too_long');
  return { ok: true, amount: money(significant) };
}
