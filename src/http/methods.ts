/** The methods that never change state. */
const READ_ONLY_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether a request may change state: every method but GET, HEAD and OPTIONS. Such a request
 * may carry a body, needs the CSRF token with a session, and makes the access cache forget what
 * it holds (authenticate.ts). NOTE: deliberately every other method, not only the contract's
 * POST, PUT, PATCH and DELETE: the application behind the access middleware may accept any.
 */
export function mayWrite(method: string): boolean {
  return !READ_ONLY_METHODS.has(method);
}
