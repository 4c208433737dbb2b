import type { Context, Middleware, Next } from 'koa';
import { canonicalPath, pathSegments } from './canonical-path.js';

export interface SubscriptionSettings {
  PROTECTED_PATHS: string[];
  SUBSCRIPTION_REQUIRED_REDIRECT: string;
}

export interface AccessUser {
  id: string;
  isStaff: boolean;
}

export interface SubscriptionAccessOptions {
  settings: SubscriptionSettings;
  /** The authenticated user, set by the component that authenticates (runs before this one). */
  getUser: (ctx: Context) => AccessUser | null;
  /** Whether a paid period (or trial) of the user's active or trialing subscription covers now (src/domain/paid-access.ts in the service). */
  hasAccess: (user: AccessUser, ctx: Context) => Promise<boolean>;
  /**
   * Compare paths ignoring letter case (default true). Our router is case-sensitive, so a
   * differently cased path is a 404 for it anyway; a host whose router ignores case (as
   * @koa/router does by default) needs this on, and denying more is the safe default.
   */
  ignoreCase?: boolean;
}

/** An API request: JSON content type, an /api/ path, or an Accept header starting with application/json. */
export function isApiRequest(ctx: Context): boolean {
  const contentType = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
  return contentType === 'application/json' || canonicalPath(ctx.path).startsWith('/api/') || ctx.get('accept').toLowerCase().startsWith('application/json');
}

/** Why the rule lets a user open a path or not (GET /admin/customers/{customer}/access/ answers it). */
export type AccessReason = 'path_not_protected' | 'not_authenticated' | 'staff' | 'subscription_active' | 'subscription_required';

export interface AccessDecision {
  allowed: boolean;
  reason: AccessReason;
}

/** The rule alone: whether the user may open `path`, and why (`user` is asked only for a protected path). */
export type AccessRule = (path: string, user: () => AccessUser | null, ctx: Context) => Promise<AccessDecision>;

/**
 * The subscription access rule, written once: the middleware below and the access check of the
 * staff API (`GET /admin/customers/{customer}/access/`) both ask it, so a host application in
 * another language decides exactly as this one does.
 */
export function subscriptionAccessRule(options: Omit<SubscriptionAccessOptions, 'getUser'>): AccessRule {
  const fold = options.ignoreCase === false ? (s: string) => s : (s: string) => s.toLowerCase();
  const segmentsOf = (path: string) => pathSegments(path).map(fold);
  const prefixes = options.settings.PROTECTED_PATHS.filter((p) => p.trim().length > 0).map((p) => segmentsOf(p.trim()));
  // NOTE: decided on the path's segments as the router reads them (percent-decoded, dot segments
  // and repeated or trailing slashes resolved), and a prefix matches whole segments only:
  // `/app/dash` protects `/app/dash/x`, never `/app/dashboard/`.
  const isProtected = (path: string) => {
    const segments = segmentsOf(path);
    return prefixes.some((prefix) => prefix.length <= segments.length && prefix.every((s, i) => s === segments[i]));
  };
  return async (path, userOf, ctx) => {
    if (prefixes.length === 0 || !isProtected(path)) return { allowed: true, reason: 'path_not_protected' };
    const user = userOf();
    if (!user) return { allowed: false, reason: 'not_authenticated' };
    if (user.isStaff) return { allowed: true, reason: 'staff' };
    return (await options.hasAccess(user, ctx)) ? { allowed: true, reason: 'subscription_active' } : { allowed: false, reason: 'subscription_required' };
  };
}

/**
 * SubscriptionAccessMiddleware: restricts path prefixes to staff and to users with an active
 * or trialing subscription. API requests are denied with a 403 JSON body `{error, code}`;
 * other requests are redirected to SUBSCRIPTION_REQUIRED_REDIRECT. `rule`: the rule made from
 * the same options, when the caller also asks it elsewhere.
 */
export function subscriptionAccessMiddleware(options: SubscriptionAccessOptions, rule: AccessRule = subscriptionAccessRule(options)): Middleware {
  return async (ctx: Context, next: Next) => {
    const decision = await rule(ctx.path, () => options.getUser(ctx), ctx);
    if (decision.allowed) return next();
    if (isApiRequest(ctx)) {
      ctx.status = 403;
      ctx.body = decision.reason !== 'not_authenticated'
        ? { error: 'Active subscription required.', code: 'subscription_required' }
        : { error: 'Authentication required.', code: 'subscription_required' };
      return;
    }
    ctx.redirect(options.settings.SUBSCRIPTION_REQUIRED_REDIRECT);
  };
}
