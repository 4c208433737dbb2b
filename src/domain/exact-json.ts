import { Decimal } from 'decimal.js';

/*
 * NOTE: money is exact or refused: an amount is never rounded to fit. JSON.parse reads every
 * number through a double, so `{"amount": 20000.000000000001}` arrives as 20000 and would be
 * accepted as 20000.00. Node 20 has no reviver with the source text (that came with V8 11.4 /
 * Node 21), so this module reads the number tokens from the raw text itself: a number a double
 * holds exactly stays a number; one it would change (too many digits, a fraction a double
 * cannot hold) is handed on as its exact text, a string, which the amount parser then judges
 * (and refuses when it has more decimals than the currency allows). Nothing is ever rounded.
 *
 * Why not a library: `lossless-json` would do, but it replaces every number with its own class,
 * so every consumer (the contract validation, handlers) would need to change; this keeps plain
 * JSON values and needs no new dependency. The text is validated by JSON.parse first, so the
 * scanner below only has to tell strings from number tokens.
 */

const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/*
 * NOTE: a number written with zeros past its second decimal (`50.000`, `1.500`) is kept as
 * written too. A double reads `50.000` as fifty, but in Indonesia the dot groups thousands and
 * whoever wrote it most likely meant fifty thousand: the amount parser refuses such a text with
 * the way to write it, where the double would have quietly been fifty.
 */
const ZEROS_PAST_CENTS = /\.\d{2,}0(?:$|[eE])/;

/** True when reading `token` as a double keeps its exact decimal value. */
function isExactDouble(token: string): boolean {
  const value = Number(token);
  if (!Number.isFinite(value)) return false;
  return new Decimal(token).equals(new Decimal(value));
}

/** Whether a number written as `token` is handed on as its text (a double changes it, or zeros past the cents). */
export function keepsNumberText(token: string): boolean {
  return !isExactDouble(token) || ZEROS_PAST_CENTS.test(token);
}

/**
 * The number tokens of a valid JSON text that a double would change (or that have zeros past
 * the cents, see above), with their positions.
 * Runs on text JSON.parse has accepted, so outside strings a `-` or a digit starts a number.
 */
function lossyNumbers(text: string): { start: number; end: number; token: string }[] {
  const found: { start: number; end: number; token: string }[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      i += 1;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i += 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER_TOKEN.lastIndex = i;
      const m = NUMBER_TOKEN.exec(text);
      const token = m ? m[0] : c;
      if (keepsNumberText(token)) found.push({ start: i, end: i + token.length, token });
      i += token.length;
    } else {
      i += 1;
    }
  }
  return found;
}

/**
 * JSON.parse, except that a number a double cannot hold exactly, or one with zeros past its
 * cents, is returned as a string of its exact text (see above). Throws JSON.parse's SyntaxError on invalid JSON.
 */
export function parseJsonExact(text: string): unknown {
  const value: unknown = JSON.parse(text);
  const lossy = lossyNumbers(text);
  if (lossy.length === 0) return value;
  let rewritten = '';
  let at = 0;
  for (const n of lossy) {
    rewritten += `${text.slice(at, n.start)}"${n.token}"`;
    at = n.end;
  }
  return JSON.parse(rewritten + text.slice(at));
}
