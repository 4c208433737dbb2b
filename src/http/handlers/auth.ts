import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { User } from '../../db/entities/user.js';
import type { ServiceContext } from '../../services/context.js';
import { DomainError, ValidationError } from '../../domain/errors.js';
import { setPassword } from '../../services/users/set-password.js';
import { checkPassword, clientIp } from '../auth/authenticate.js';
import type { LoginThrottler } from '../auth/login-throttle.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { serializeUser } from '../serializers.js';

/** A password guess by the request's client (checkPassword): the user, null when wrong, 429 over the throttle's limit. */
async function guess(throttler: LoginThrottler, koa: Context, services: ServiceContext, username: string, password: string): Promise<User | null> {
  const verdict = await checkPassword(services.em, throttler, { username, password }, clientIp(koa), services.clock.now());
  if (verdict.result === 'rate_limited') {
    koa.set('Retry-After', String(verdict.wait));
    throw new DomainError('rate_limited', 'Too many failed logins; try again later.');
  }
  return verdict.result === 'ok' ? verdict.user : null;
}

export function authHandlers(throttler: LoginThrottler): OperationHandlers {
  return {
    async login({ koa, body, services }) {
      const user = await guess(throttler, koa, services, body.username, body.password);
      if (!user) throw new DomainError('not_authenticated', 'Invalid username or password.');
      // The CSRF token guards session-authenticated changes; regenerating stores the session
      // under a fresh id, so an id planted before login is worthless (no fixation).
      const csrfToken = randomBytes(24).toString('base64url');
      koa.session!.userId = user.id;
      koa.session!.csrfToken = csrfToken;
      await koa.session!.regenerate();
      return { status: 200, body: { user: serializeUser(user), csrf_token: csrfToken } };
    },

    async logout({ koa }) {
      koa.session = null;
      return { status: 204, body: undefined };
    },

    async changePassword(req) {
      const { koa, body, services } = req;
      const me = requireUser(req);
      // The current password is a guess like a login's, counted the same way: a stolen session
      // cannot be used to find the password by trying.
      if (!(await guess(throttler, koa, services, me.username, body.current_password))) {
        throw new ValidationError([{ field: 'current_password', message: 'is not the current password' }]);
      }
      await setPassword(services, me, body.new_password, 'new_password');
      // Its row is gone with the others; nothing is written back under this cookie.
      if (koa.state.authMethod === 'session') koa.session = null;
      return { status: 204, body: undefined };
    },

    async getCurrentUser(req) {
      // The fields authentication already read (cached row) when there are any: no entity walk.
      return { status: 200, body: serializeUser(req.koa.state.userFields ?? requireUser(req)) };
    },
  };
}
