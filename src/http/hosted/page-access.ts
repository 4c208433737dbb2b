import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Context } from 'koa';
import type { HostedSession, HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { DataContext } from '../../services/context.js';
import { HOSTED_ROOTS, openHostedPage, PAGE_MINUTES, type Refusal } from '../../services/hosted/hosted-sessions.js';

/** The cookie that binds a page to the browser that opened its link; one per page, by path. */
export const PAGE_COOKIE = 'billing.page';

export const pagePath = (kind: HostedSessionKind, token: string): string => `${HOSTED_ROOTS[kind]}/${token}/`;

/**
 * Opens the page for this request: the browser holding the page's cookie, or the first one to
 * follow the link (which gets the cookie, scoped to the page's own path, so that it is never
 * sent anywhere else on this host, and HttpOnly, so that no script reads it).
 */
export async function pageFor(ctx: Context, data: DataContext, kind: HostedSessionKind, token: string, secure: boolean): Promise<{ session: HostedSession } | { refusal: Refusal }> {
  const opened = await openHostedPage(data, kind, token, ctx.cookies.get(PAGE_COOKIE) ?? null);
  if (!opened.ok) return { refusal: opened.refusal };
  if (opened.browserSecret) {
    ctx.cookies.set(PAGE_COOKIE, opened.browserSecret, {
      path: pagePath(kind, token),
      httpOnly: true,
      sameSite: 'lax',
      secure,
      signed: false,
      maxAge: PAGE_MINUTES * 60_000,
      overwrite: true,
    });
  }
  return { session: opened.session };
}

/**
 * The page's CSRF token: an HMAC, under the app's first key, of the page and the hash of its
 * browser's secret. Forms carry it; a form from anywhere else (or an earlier page) lacks it.
 */
export function csrfToken(key: string, session: HostedSession): string {
  return createHmac('sha256', key).update(`${session.id}:${session.browserSecretHash ?? ''}`).digest('base64url');
}

export function csrfMatches(key: string, session: HostedSession, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const expected = Buffer.from(csrfToken(key, session));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
