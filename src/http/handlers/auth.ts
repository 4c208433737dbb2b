import { randomBytes } from 'node:crypto';
import { DomainError } from '../../domain/errors.js';
import { authenticate } from '../../services/users/authenticate.js';
import { clientIp } from '../auth/authenticate.js';
import type { LoginThrottler } from '../auth/login-throttle.js';
import { requireUser, type OperationHandlers } from '../operations.js';
import { serializeUser } from '../serializers.js';

export function authHandlers(throttler: LoginThrottler): OperationHandlers {
  return {
    async login({ koa, body, services }) {
      const ip = clientIp(koa);
      // Counted before the compare (see LoginThrottler), so concurrent guesses cannot pass the limit.
      const wait = await throttler.attempt(body.username, ip, services.clock.now());
      if (wait > 0) {
        koa.set('Retry-After', String(wait));
        throw new DomainError('rate_limited', 'Too many failed logins; try again later.');
      }
      const user = await authenticate(services, body.username, body.password);
      if (!user) throw new DomainError('not_authenticated', 'Invalid username or password.');
      await throttler.succeeded(body.username, ip);
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

    async getCurrentUser(req) {
      // The fields authentication already read (cached row) when there are any: no entity walk.
      return { status: 200, body: serializeUser(req.koa.state.userFields ?? requireUser(req)) };
    },
  };
}
