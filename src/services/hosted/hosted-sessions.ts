import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { HostedSession, type HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { ValidationError, type FieldError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { findSubscribablePlan } from '../plans/get-plan.js';
import { checkTopupAmount } from '../topups/create-topup.js';

/** How long a link opens (DECISIONS §13). */
export const LINK_MINUTES = 15;
/** How long the browser that opened a link keeps its page: long enough to pay a virtual account from a phone. */
export const PAGE_MINUTES = 60;

/** Where each kind of page lives, at the server's root. */
export const HOSTED_ROOTS: Record<HostedSessionKind, string> = { checkout: '/pay', portal: '/portal' };

/** A secret for a link or a browser: 32 random bytes, base64url. */
const newSecret = (): string => randomBytes(32).toString('base64url');
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export interface MadeLink {
  session: HostedSession;
  url: string;
}

/**
 * A return URL must be absolute http(s) on an allowed origin: HOSTED_RETURN_ORIGINS, or the
 * server's own when none is set. Anything else could send a customer to a lookalike shop.
 */
function checkReturnUrl(ctx: DataContext, ownOrigin: string, raw: string, field: string, errors: FieldError[], ownPage = false): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    errors.push({ field, message: 'must be an absolute URL' });
    return raw;
  }
  // The portal's own top-up returns to the portal, on this server, whatever the shop's origins are.
  const allowed = ctx.config.hosted.returnOrigins.length > 0 && !ownPage ? ctx.config.hosted.returnOrigins : [ownOrigin];
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !allowed.includes(url.origin)) {
    errors.push({ field, message: `must be on one of the allowed origins (HOSTED_RETURN_ORIGINS): ${allowed.join(', ')}` });
  }
  return url.toString();
}

function makeLink(ctx: DataContext, session: Omit<Partial<HostedSession>, 'user'> & { kind: HostedSessionKind; user: User }, origin: string): MadeLink {
  const token = newSecret();
  const now = ctx.clock.now();
  const made = ctx.em.create(HostedSession, {
    ...session,
    user: session.user,
    tokenHash: sha256(token),
    expiresAt: new Date(now.getTime() + LINK_MINUTES * 60_000),
    createdAt: now,
  });
  return { session: made, url: `${origin}${HOSTED_ROOTS[session.kind]}/${token}/` };
}

export interface CheckoutInput {
  planId?: string;
  topupAmount?: unknown;
  paymentType?: Exclude<PaymentType, 'wallet'>;
  successUrl: string;
  cancelUrl: string;
}

/**
 * A checkout link for `user`: a plan to buy or an amount to top up by. `origin` is the one the
 * link is made on (PUBLIC_URL, else the request's). Nothing is charged here: the customer's
 * choice on the page runs the same use cases as the API.
 */
export async function createCheckoutSession(ctx: DataContext, user: User, input: CheckoutInput, origin: string, opts: { ownPage?: boolean } = {}): Promise<MadeLink> {
  const errors: FieldError[] = [];
  if ((input.planId === undefined) === (input.topupAmount === undefined)) {
    errors.push({ field: 'plan_id', message: 'give exactly one of plan_id and topup_amount' });
  }
  const topupAmount = input.topupAmount === undefined ? null : checkTopupAmount(ctx, input.topupAmount, 'topup_amount', errors);
  const successUrl = checkReturnUrl(ctx, origin, input.successUrl, 'success_url', errors, opts.ownPage);
  const cancelUrl = checkReturnUrl(ctx, origin, input.cancelUrl, 'cancel_url', errors, opts.ownPage);
  if (errors.length > 0) throw new ValidationError(errors);
  const plan = input.planId === undefined ? null : await findSubscribablePlan(ctx, input.planId);
  const link = makeLink(ctx, { kind: 'checkout', user, plan, topupAmount, paymentType: input.paymentType ?? null, successUrl, cancelUrl }, origin);
  await ctx.em.flush();
  return link;
}

/** A portal link for `user`, its links back leading to `returnUrl`. */
export async function createPortalSession(ctx: DataContext, user: User, returnUrl: string, origin: string): Promise<MadeLink> {
  const errors: FieldError[] = [];
  const checked = checkReturnUrl(ctx, origin, returnUrl, 'return_url', errors);
  if (errors.length > 0) throw new ValidationError(errors);
  const link = makeLink(ctx, { kind: 'portal', user, returnUrl: checked }, origin);
  await ctx.em.flush();
  return link;
}

/** Why a page is refused: the link never existed, or it was opened elsewhere or has run out (410). */
export type Refusal = 'unknown' | 'gone';

export type OpenedPage =
  | { ok: true; session: HostedSession; /** set when this request opened the link: the cookie to give the browser */ browserSecret: string | null }
  | { ok: false; refusal: Refusal };

function sameSecret(secret: string, hash: string | null): boolean {
  if (!hash) return false;
  return timingSafeEqual(Buffer.from(sha256(secret), 'hex'), Buffer.from(hash, 'hex'));
}

/**
 * The page a request may see. The browser that holds the page's cookie keeps it for
 * PAGE_MINUTES after opening; a request without that cookie opens the link if it was never
 * opened and has not expired (one conditional UPDATE, so that of forty requests at once only one
 * opens it), and is refused with `gone` otherwise.
 */
export async function openHostedPage(ctx: DataContext, kind: HostedSessionKind, token: string, browserSecret: string | null): Promise<OpenedPage> {
  const session = await ctx.em.findOne(HostedSession, { tokenHash: sha256(token), kind }, { populate: ['user', 'plan'] });
  if (!session) return { ok: false, refusal: 'unknown' };
  const now = ctx.clock.now();
  if (browserSecret !== null && session.openedAt && sameSecret(browserSecret, session.browserSecretHash)) {
    const pageEnds = session.openedAt.getTime() + PAGE_MINUTES * 60_000;
    return now.getTime() < pageEnds && !session.user.disabledAt ? { ok: true, session, browserSecret: null } : { ok: false, refusal: 'gone' };
  }
  if (session.openedAt || now >= session.expiresAt || session.user.disabledAt) return { ok: false, refusal: 'gone' };
  const secret = newSecret();
  const opened = await ctx.em.nativeUpdate(HostedSession, { id: session.id, openedAt: null }, { openedAt: now, browserSecretHash: sha256(secret) });
  if (opened !== 1) return { ok: false, refusal: 'gone' };
  session.openedAt = now;
  session.browserSecretHash = sha256(secret);
  return { ok: true, session, browserSecret: secret };
}

/**
 * Forgets links that can no longer open a page: unopened past their expiry, or opened before
 * it and past the page's own PAGE_MINUTES since. Run by the server's hourly sweep, so that
 * links asked for and never used cannot fill the table.
 */
export async function deleteExpiredHostedSessions(ctx: Pick<DataContext, 'em'>, now: Date): Promise<number> {
  return ctx.em.nativeDelete(HostedSession, { expiresAt: { $lt: new Date(now.getTime() - PAGE_MINUTES * 60_000) } });
}
