import { User } from '../../db/entities/user.js';
import { sessionUserIdSql } from '../../db/dialect.js';
import { ValidationError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { hashPassword, passwordProblem } from './passwords.js';

/**
 * Gives a user a new password and ends every session they have, in one transaction
 * (`billing-admin users set-password` and `POST /auth/password/`).
 *
 * NOTE: "on every process at once" needs nothing more here. The user row's update and the
 * sessions' deletion raise the user's access version (database triggers,
 * Migration20261124001457), which every process reads again within ACCESS_RECHECK_MS (1 s by
 * default): a cached session is then found gone, and a cached Basic credential is dropped
 * because the stored password hash it was verified against has changed (src/http/auth/).
 * Returns how many sessions ended.
 */
export async function setPassword(ctx: DataContext, user: User, newPassword: string, field = 'password'): Promise<number> {
  const problem = passwordProblem(newPassword);
  if (problem) throw new ValidationError([{ field, message: problem }]);
  const passwordHash = await hashPassword(newPassword);
  return ctx.em.transactional(async (em) => {
    await em.nativeUpdate(User, { id: user.id }, { passwordHash, updatedAt: ctx.clock.now() });
    const result = (await em.execute(`delete from sessions where ${sessionUserIdSql(em, 'data')} = ?`, [user.id], 'run')) as { affectedRows?: number };
    user.passwordHash = passwordHash;
    return result.affectedRows ?? 0;
  });
}
