import { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { isUuid } from '../../domain/ids.js';


/** The user an operator names on the command line, by username or by id. */
export async function findWalletOwner(ctx: Pick<DataContext, 'em'>, usernameOrId: string): Promise<User> {
  const user =
    (await ctx.em.findOne(User, { username: usernameOrId })) ??
    (isUuid(usernameOrId) ? await ctx.em.findOne(User, { id: usernameOrId.toLowerCase() }) : null);
  if (!user) throw new NotFoundError(`User "${usernameOrId}"`);
  return user;
}
