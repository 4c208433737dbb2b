/**
 * The one parser for our ids, wherever they arrive (a path's `{id}`, a body's `format: uuid`, a
 * CLI argument).
 *
 * NOTE: an id is a canonical UUID, 8-4-4-4-12 hexadecimal digits, matched after lower-casing and
 * used lower-cased, so `ABC…` and `abc…` name the same row on SQLite (text, compared byte for
 * byte) and PostgreSQL (uuid) alike. Every other spelling PostgreSQL's uuid input would also take
 * (`urn:uuid:…`, `{…}`, no hyphens) or refuse (whitespace, overlong) is refused here: the
 * contract's validator once took `urn:uuid:` and a database cast then failed with a 500 on
 * PostgreSQL only (issue 28).
 */
const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The id in its canonical (lower-case) spelling, or null when it is no canonical UUID. */
export function parseUuid(raw: string): string | null {
  if (raw.length !== 36) return null;
  const lower = raw.toLowerCase();
  return CANONICAL_UUID.test(lower) ? lower : null;
}

/** Whether a string is a UUID (our ids), as opposed to a slug, username or order id. */
export function isUuid(value: string): boolean {
  return parseUuid(value) !== null;
}
