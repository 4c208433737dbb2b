import type { EntityManager } from '@mikro-orm/knex';
import { isPostgres } from '../../db/dialect.js';
import { hotRows } from '../../db/hot-sql.js';
import { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import { parseUuid } from '../../domain/ids.js';
import type { DataContext } from '../context.js';

/** How an integrator's own id is written where a customer is named: `ext:<external_id>`. */
export const EXTERNAL_PREFIX = 'ext:';

/**
 * The customer a reference names: `ext:<external_id>`, a user id, or a username (usernames
 * cannot contain ':', so the three never collide). NotFoundError when none is.
 */
export async function findCustomer(ctx: Pick<DataContext, 'em'>, ref: string): Promise<User> {
  let user: User | null = null;
  if (ref.startsWith(EXTERNAL_PREFIX)) {
    const externalId = ref.slice(EXTERNAL_PREFIX.length);
    if (externalId.length > 0 && externalId.length <= 100) user = await ctx.em.findOne(User, { externalId });
  } else {
    user = ref.length <= 150 ? await ctx.em.findOne(User, { username: ref }) : null;
    const id = user ? null : parseUuid(ref);
    if (id) user = await ctx.em.findOne(User, { id });
  }
  if (!user) throw new NotFoundError(`Customer "${ref}"`);
  return user;
}

/**
 * The customers many references name at once (a batch of usage events), by one query: each
 * reference read as findCustomer reads it. References that name nobody are absent from the map.
 */
export async function findCustomerIds(em: EntityManager, refs: readonly string[]): Promise<Map<string, string>> {
  const externalIds = new Set<string>();
  const usernames = new Set<string>();
  const ids = new Set<string>();
  for (const ref of refs) {
    if (ref.startsWith(EXTERNAL_PREFIX)) {
      const externalId = ref.slice(EXTERNAL_PREFIX.length);
      if (externalId.length > 0 && externalId.length <= 100) externalIds.add(externalId);
      continue;
    }
    if (ref.length <= 150) usernames.add(ref);
    const id = parseUuid(ref);
    if (id) ids.add(id);
  }
  const found = new Map<string, string>();
  if (externalIds.size + usernames.size + ids.size === 0) return found;
  const rows = isPostgres(em)
    ? await hotRows<{ id: string; username: string; external_id: string | null }>(
        em,
        'select id, username, external_id from users where id = any(?::uuid[]) or username = any(?::text[]) or external_id = any(?::text[])',
        [[...ids], [...usernames], [...externalIds]],
      )
    : await hotRows<{ id: string; username: string; external_id: string | null }>(
        em,
        'select id, username, external_id from users where id in (select value from json_each(?)) or username in (select value from json_each(?)) or external_id in (select value from json_each(?))',
        [JSON.stringify([...ids]), JSON.stringify([...usernames]), JSON.stringify([...externalIds])],
      );
  const byUsername = new Map(rows.map((r) => [r.username, String(r.id)]));
  const byExternal = new Map(rows.filter((r) => r.external_id !== null).map((r) => [r.external_id!, String(r.id)]));
  const byId = new Set(rows.map((r) => String(r.id)));
  for (const ref of refs) {
    const id = ref.startsWith(EXTERNAL_PREFIX) ? byExternal.get(ref.slice(EXTERNAL_PREFIX.length)) : (byUsername.get(ref) ?? (byId.has(parseUuid(ref) ?? '') ? parseUuid(ref)! : undefined));
    if (id) found.set(ref, id);
  }
  return found;
}
