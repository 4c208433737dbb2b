import type { FieldError } from '../domain/errors.js';

/*
 * Limits on what a request may hold, checked before anything walks or stores it: how deep a JSON
 * body nests, and which characters neither database can store. Both databases get the same
 * answer (400 naming the field), so SQLite does not keep what PostgreSQL would refuse.
 */

/**
 * The webhook's body limit (64 KiB): a real notification is 1-3 KB; whatever the
 * webhook receives is logged, so it must not take the general MAX_BODY_BYTES.
 */
export const WEBHOOK_MAX_BODY_BYTES = 64 * 1024;

/** Containers (objects and arrays) a JSON body may nest; real bodies of this API use three. */
export const MAX_JSON_DEPTH = 32;

/**
 * Whether a JSON text nests deeper than `max`, judged by one pass over the characters (no
 * recursion, no parse), so that a body of 10,000 brackets is refused before anything walks it.
 */
export function jsonNestsDeeperThan(raw: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) return true;
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return false;
}

/** A UTF-16 surrogate without its partner: no valid Unicode text, and PostgreSQL refuses it. */
const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored as text on both databases, or null when it can. */
export function unstorableReason(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters';
  if (UNPAIRED_SURROGATE.test(s)) return 'must be valid Unicode text (no unpaired surrogates)';
  return null;
}

/**
 * The first string or key in a parsed value that neither database can store, as a field error
 * (`metadata.note`), or null. Iterative, so the depth of the value cannot overflow the stack.
 */
export function unstorableField(value: unknown, root = ''): FieldError | null {
  const stack: { value: unknown; path: string }[] = [{ value, path: root }];
  while (stack.length > 0) {
    const { value: v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const reason = unstorableReason(v);
      if (reason) return { field: path || 'body', message: reason };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    // Pushed in reverse so that fields are reported in the order they were sent.
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      const field = path ? `${path}.${key}` : key;
      stack.push({ value: item, path: field });
      const reason = unstorableReason(key);
      if (reason) stack.push({ value: key, path: field });
    }
  }
  return null;
}
