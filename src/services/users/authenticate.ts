import { User } from '../../db/entities/user.js';
import type { DataContext } from '../context.js';
import { dummyPasswordHash, verifyPassword } from './passwords.js';

/**
 * Checks a username and password; null when either is wrong, or when the user is disabled
 * (which of these is never revealed: the password is compared all the same).
 */
export async function authenticate(ctx: Pick<DataContext, 'em'>, username: string, password: string): Promise<User | null> {
  const user = username.length <= 150 ? await ctx.em.findOne(User, { username }) : null;
  // A customer made without a password ('') is checked against the dummy too: never a match, same time.
  const ok = await verifyPassword(password, user?.passwordHash || (await dummyPasswordHash()));
  return user && ok && user.disabledAt === null ? user : null;
}
