import { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The user an operator names on the command line, by username or by id. */
export async function findWalletOwner(ctx: Pick<DataContext, 'em'>, usernameOrId: string): Promise<User> {
  const user =
    (await ctx.em.findOne(User, { username: usernameOrId })) ??
    (UUID.test(usernameOrId) ? await ctx.em.findOne(User, { id: usernameOrId.toLowerCase() }) : null);
  if (!user) throw new NotFoundError(`User "${usernameOrId}"`);
  return user;
}
