import { Topup } from '../../db/entities/topup.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';

/** One of the user's top-ups; someone else's is not found (never forbidden). */
export async function getTopup(ctx: Pick<DataContext, 'em'>, user: User, id: string): Promise<Topup> {
  const topup = await ctx.em.findOne(Topup, { id, user });
  if (!topup) throw new NotFoundError('Top-up');
  return topup;
}
