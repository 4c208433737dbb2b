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
