import { parseUuid } from '../domain/ids.js';

/**
 * Path parameters as the handlers receive them. The contract's validator has already refused
 * every `{id}` that is no canonical UUID (the `uuid` format is `isUuid`, src/domain/ids.ts), and
 * api.ts answers such a path 404: it names no resource. What is left to do is
 * the lower-casing, so an upper-case id finds its row on SQLite too.
 */
export function canonicalPathParams(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...params };
  for (const [name, value] of Object.entries(out)) {
    if (typeof value === 'string') out[name] = parseUuid(value) ?? value;
  }
  return out;
}
