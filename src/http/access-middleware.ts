import type { Context, Middleware, Next } from 'koa';

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
  /** Whether the user has an active or trialing subscription. */
  hasAccess: (user: AccessUser, ctx: Context) => Promise<boolean>;
}

/** Specification rule 6: JSON content type, an /api/ path, or an Accept header starting with application/json. */
export function isApiRequest(ctx: Context): boolean {
  const contentType = (ctx.get('content-type') || '').split(';')[0].trim().toLowerCase();
  return contentType === 'application/json' || ctx.path.startsWith('/api/') || ctx.get('accept').toLowerCase().startsWith('application/json');
}

/**
 * SubscriptionAccessMiddleware: restricts path prefixes to staff and to users with an active
 * or trialing subscription. API requests are denied with the specification's 403 JSON body;
 * other requests are redirected to SUBSCRIPTION_REQUIRED_REDIRECT.
 */
export function subscriptionAccessMiddleware(options: SubscriptionAccessOptions): Middleware {
  const prefixes = options.settings.PROTECTED_PATHS.filter((p) => p.length > 0);
  return async (ctx: Context, next: Next) => {
    if (!prefixes.some((prefix) => ctx.path.startsWith(prefix))) return next();
    const user = options.getUser(ctx);
    if (user && (user.isStaff || (await options.hasAccess(user, ctx)))) return next();
    if (isApiRequest(ctx)) {
      ctx.status = 403;
      ctx.body = user
        ? { error: 'Active subscription required.', code: 'subscription_required' }
        : { error: 'Authentication required.', code: 'subscription_required' };
      return;
    }
    ctx.redirect(options.settings.SUBSCRIPTION_REQUIRED_REDIRECT);
  };
}
