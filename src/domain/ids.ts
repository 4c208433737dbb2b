const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string is a UUID (our ids), as opposed to a slug, username or order id. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
