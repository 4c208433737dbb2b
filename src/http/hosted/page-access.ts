import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { HostedSession, HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { ServiceContext } from '../../services/context.js';
import { checkoutProgress } from '../../services/hosted/checkout.js';
import {
  checkoutLinkEnd,
  extendCheckoutLink,
  findHostedSession,
  HOSTED_ROOTS,
  newSecret,
  portalAccess,
  touchPortalLink,
  type Refusal,
} from '../../services/hosted/hosted-sessions.js';

/** The cookie that holds this browser's secret for one page (scoped by path to that page). */
export const PAGE_COOKIE = 'billing.page';
/** The browser's secret outlives any page it serves; the link's own rules decide what opens. */
const PAGE_COOKIE_DAYS = 7;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

export const pagePath = (kind: HostedSessionKind, token: string): string => `${HOSTED_ROOTS[kind]}/${token}/`;

/**
 * This browser's secret for the page: its cookie, or a new one set now (on the page's own path,
 * so it is never sent anywhere else on this host; HttpOnly, so no script reads it; SameSite=Lax,
 * so another site's form does not carry it). Forms' CSRF tokens are derived from it, and a
 * portal link is bound to it when this browser claims the link.
 */
export function browserSecret(ctx: Context, kind: HostedSessionKind, token: string, secure: boolean): string {
  const held = ctx.cookies.get(PAGE_COOKIE);
  if (held && SECRET.test(held)) return held;
  const secret = newSecret();
  ctx.cookies.set(PAGE_COOKIE, secret, {
    path: pagePath(kind, token),
    httpOnly: true,
    sameSite: 'lax',
    secure,
    signed: false,
    maxAge: PAGE_COOKIE_DAYS * 86_400_000,
    overwrite: true,
  });
  return secret;
}

export type PageAccess =
  | { state: 'open'; session: HostedSession; browser: string }
  /** A portal link nobody has claimed yet: its landing page, whose button claims it. */
  | { state: 'landing'; session: HostedSession; browser: string }
  /** `session` is known for a link that no longer opens: its 410 page leads back to the shop. */
  | { state: 'refused'; refusal: Refusal; session: HostedSession | null };

/**
 * Whether a checkout link still opens: before its expiry, or while the payment it shows has
 * not expired (the link is extended to it), or for a while after it completed.
 */
async function checkoutOpens(data: ServiceContext, session: HostedSession): Promise<boolean> {
  if (session.user.disabledAt) return false;
  const now = data.clock.now();
  // Nothing chosen yet: the link's own expiry alone decides, without reading more.
  if (now < session.expiresAt && !session.subscription && !session.topup) return true;
  const progress = await checkoutProgress(data, session);
  const paymentExpiresAt = progress.state === 'pending' ? progress.expiresAt : null;
  const end = checkoutLinkEnd(session, { completed: progress.state === 'paid' || progress.state === 'trialing', paymentExpiresAt });
  if (now >= end) return false;
  await extendCheckoutLink(data, session, paymentExpiresAt);
  return true;
}

/**
 * What this request may see of the page the path's secret names. A checkout opens for anyone
 * holding its link, any number of times; a portal only for the browser that claimed it (its
 * landing page otherwise). Nothing here claims or uses up a link.
 */
export async function pageFor(ctx: Context, data: ServiceContext, kind: HostedSessionKind, token: string, secure: boolean): Promise<PageAccess> {
  const session = await findHostedSession(data, kind, token);
  if (!session) return { state: 'refused', refusal: 'unknown', session: null };
  if (kind === 'checkout') {
    if (!(await checkoutOpens(data, session))) return { state: 'refused', refusal: 'gone', session };
    return { state: 'open', session, browser: browserSecret(ctx, kind, token, secure) };
  }
  const held = ctx.cookies.get(PAGE_COOKIE) ?? null;
  const access = portalAccess(session, held, data.clock.now());
  if (access === 'gone') return { state: 'refused', refusal: 'gone', session };
  if (access === 'landing') return { state: 'landing', session, browser: browserSecret(ctx, kind, token, secure) };
  await touchPortalLink(data, session);
  return { state: 'open', session, browser: held! };
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/**
 * The page's CSRF token for this browser: an HMAC, under the app's first key, of the page and
 * the hash of the browser's own secret (its cookie). A form carries it and the cookie comes with
 * it; a form from anywhere else lacks one or the other (double submit, bound to the page).
 */
export function csrfToken(key: string, session: Pick<HostedSession, 'id'>, browser: string): string {
  return createHmac('sha256', key).update(`${session.id}:${sha256(browser)}`).digest('base64url');
}

export function csrfMatches(key: string, session: Pick<HostedSession, 'id'>, browser: string, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const expected = Buffer.from(csrfToken(key, session, browser));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
