import { LockMode } from '@mikro-orm/core';
import { isPostgres, sessionUserIdSql } from '../../db/dialect.js';
import { User } from '../../db/entities/user.js';
import type { Actor } from '../audit/actor.js';
import { recordAuditEvent } from '../audit/record-audit-event.js';
import type { DataContext } from '../context.js';

export interface UserDisabledChange {
  /** The user as it is now. */
  user: User;
  /** False when the user already was as asked (disabling twice is no error). */
  changed: boolean;
  before: Date | null;
  after: Date | null;
  /** Sessions ended by disabling (0 when enabling or unchanged). */
  sessionsEnded: number;
}

/**
 * Disables a user (stamps `disabled_at`) or enables them again (clears it); support staff's
 * `billing-admin users disable|enable`. A disabled user cannot log in or use HTTP Basic, and
 * every session they have ends now, in the same transaction, so enabling them later does not
 * bring an old session back.
 *
 * NOTE: "at once on every process" needs nothing more here, as for setPassword: the row's
 * update and the sessions' deletion raise the user's access version (database triggers), which
 * every process reads again within ACCESS_RECHECK_MS; src/http/auth/ then refuses the user.
 */
export async function setUserDisabled(ctx: DataContext, actor: Actor, user: User, disabled: boolean, reason?: string | null): Promise<UserDisabledChange> {
  const change = await ctx.em.transactional(async (em) => {
    const row = await em.findOneOrFail(User, { id: user.id }, { refresh: true, ...(isPostgres(em) ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {}) });
    const before = row.disabledAt;
    if ((before !== null) === disabled) return { changed: false, before, after: before, sessionsEnded: 0 };
    const now = ctx.clock.now();
    const after = disabled ? now : null;
    await em.nativeUpdate(User, { id: user.id }, { disabledAt: after, updatedAt: now });
    const ended = disabled ? ((await em.execute(`delete from sessions where ${sessionUserIdSql(em, 'data')} = ?`, [user.id], 'run')) as { affectedRows?: number }) : {};
    await recordAuditEvent({ ...ctx, em }, actor, {
      action: disabled ? 'user.disable' : 'user.enable',
      target: { type: 'user', id: user.id },
      reason,
      changes: { disabled_at: [before?.toISOString() ?? null, after?.toISOString() ?? null] },
    });
    return { changed: true, before, after, sessionsEnded: ended.affectedRows ?? 0 };
  });
  user.disabledAt = change.after;
  return { user, ...change };
}
