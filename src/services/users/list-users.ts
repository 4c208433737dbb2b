import { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';

export async function listUsers(ctx: Pick<DataContext, 'em'>): Promise<User[]> {
  return ctx.em.find(User, {}, { orderBy: { createdAt: 'asc', username: 'asc' } });
}
