import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { HostedSession, type HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { PaymentType } from '../../db/entities/subscription.js';
import type { User } from '../../db/entities/user.js';
import { SubscriptionExistsError, ValidationError, type FieldError } from '../../domain/errors.js';
import type { DataContext } from '../context.js';
import { findSubscribablePlan } from '../plans/get-plan.js';
import { checkTopupAmount } from '../topups/create-topup.js';
import { checkPromotionCode } from '../coupons/redeem.js';
import { quantityFor, subscriptionInTheWay } from '../subscriptions/create-subscription.js';

/** A portal link must be claimed (its landing page's button) within this many minutes of being made. */
export const PORTAL_CLAIM_MINUTES = 15;
/** A claimed portal lives this long after its last use in the browser that claimed it. */
export const PORTAL_IDLE_MINUTES = 60;
/** A portal's last use is written at most this often (ms): not a write per request. */
const LAST_USE_EVERY_MS = 60_000;
/**
 * How long a link is kept after its end: a paid checkout still shows that it is paid on a
 * reload, and any link past its end answers 410 with its way back (cancel_url, return_url)
 * rather than 404. The hourly sweep deletes it after that.
 */
export const KEEP_AFTER_END_HOURS = 24;
const KEEP_AFTER_END_MS = KEEP_AFTER_END_HOURS * 3_600_000;

/** Where each kind of page lives, at the server's root. */
export const HOSTED_ROOTS: Record<HostedSessionKind, string> = { checkout: '/pay', portal: '/portal', invoice: '/pay' };

/** A secret for a link or a browser: 32 random bytes, base64url. */
export const newSecret = (): string => randomBytes(32).toString('base64url');
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

export interface MadeLink {
  session: HostedSession;
  url: string;
}

/**
 * A return URL must be absolute http(s) on an allowed origin: HOSTED_RETURN_ORIGINS, or the
 * server's own (PUBLIC_URL's) when none is set. Anything else could send a customer to a lookalike shop.
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
  // A checkout opens until its TTL; a portal must be claimed before its expiry, then lives from its last use.
  const minutes = session.kind === 'checkout' ? ctx.config.hosted.checkoutTtlMinutes : PORTAL_CLAIM_MINUTES;
  const made = ctx.em.create(HostedSession, {
    ...session,
    user: session.user,
    tokenHash: sha256(token),
    expiresAt: new Date(now.getTime() + minutes * 60_000),
    createdAt: now,
  });
  return { session: made, url: `${origin}${HOSTED_ROOTS[session.kind]}/${token}/` };
}

export interface CheckoutInput {
  planId?: string;
  topupAmount?: unknown;
  paymentType?: Exclude<PaymentType, 'wallet'>;
  /** Units of a per-unit plan (with planId only). */
  quantity?: number;
  /** A promotion code, checked now and redeemed when the customer pays (with planId only). */
  promotionCode?: string;
  successUrl: string;
  cancelUrl: string;
}

/**
 * A checkout link for `user`: a plan to buy or an amount to top up by. `origin` is the one the
 * link is made on (PUBLIC_URL, else the server's own address; never a request's Host). Nothing is charged here: the customer's
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
  if (input.planId === undefined && input.quantity !== undefined) errors.push({ field: 'quantity', message: 'applies to a plan only (with plan_id)' });
  if (input.planId === undefined && input.promotionCode !== undefined) errors.push({ field: 'promotion_code', message: 'applies to a plan only (with plan_id)' });
  if (errors.length > 0) throw new ValidationError(errors);
  const plan = input.planId === undefined ? null : await findSubscribablePlan(ctx, input.planId);
  if (plan) await refuseIfSubscribed(ctx, user, cancelUrl, origin);
  const quantity = plan ? quantityFor(plan, input.quantity) : 1;
  // NOTE: checked now so the shop hears at once of a code that cannot be redeemed; it is counted
  // only when the customer pays (createSubscription), where its limits are enforced again.
  let promotionCode: string | null = null;
  if (plan && input.promotionCode !== undefined) {
    promotionCode = (await checkPromotionCode(ctx, { code: input.promotionCode, user, plan, quantity, at: ctx.clock.now() })).code;
  }
  const link = makeLink(ctx, { kind: 'checkout', user, plan, topupAmount, paymentType: input.paymentType ?? null, quantity, promotionCode, successUrl, cancelUrl }, origin);
  await ctx.em.flush();
  return link;
}

/**
 * A plan's checkout for a customer who already has a live subscription could only refuse them on
 * its page (the page subscribes as POST /subscriptions/ does): refused when it is asked for,
 * with the subscription and a new portal link (back to the shop's cancel_url) where they can
 * change plan instead (docs/hosted.md, 'A customer who already subscribes').
 */
async function refuseIfSubscribed(ctx: DataContext, user: User, backUrl: string, origin: string): Promise<void> {
  const live = await subscriptionInTheWay(ctx, user);
  if (!live) return;
  const portal = await createPortalSession(ctx, user, backUrl, origin);
  throw new SubscriptionExistsError(`The customer already has a subscription that is ${live.status.replace(/_/g, ' ')} (${live.id}); change its plan in the portal instead.`, {
    subscription_id: live.id,
    portal_url: portal.url,
    portal_expires_at: portal.session.expiresAt.toISOString(),
  });
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

/** Why a page is refused: the link never existed (404), or it has run out or is another browser's (410). */
export type Refusal = 'unknown' | 'gone';

function sameSecret(secret: string, hash: string | null): boolean {
  if (!hash) return false;
  return timingSafeEqual(Buffer.from(sha256(secret), 'hex'), Buffer.from(hash, 'hex'));
}

/** The link named by a path's secret, with what its pages show; null when there is none. */
export async function findHostedSession(ctx: Pick<DataContext, 'em'>, kind: HostedSessionKind, token: string): Promise<HostedSession | null> {
  return ctx.em.findOne(HostedSession, { tokenHash: sha256(token), kind }, { populate: ['user', 'plan'], refresh: true });
}

/** What a checkout's page shows, as far as the link's life depends on it. */
export interface CheckoutShown {
  /** Paid, or the trial started: the page says so and leads to success_url. */
  completed: boolean;
  /** When the payment the page shows (a VA, a QRIS code) expires, while it waits. */
  paymentExpiresAt: Date | null;
}

/**
 * Until when a checkout link opens: its own expiry, or the expiry of the payment it shows
 * when that is later (a VA paid at the ATM after the link's TTL). A completed checkout keeps
 * showing that it is paid, and where to go next, for KEEP_AFTER_END_HOURS after that.
 */
export function checkoutLinkEnd(session: Pick<HostedSession, 'expiresAt'>, shown: CheckoutShown): Date {
  const payment = shown.paymentExpiresAt?.getTime() ?? 0;
  const end = Math.max(session.expiresAt.getTime(), payment);
  return new Date(shown.completed ? end + KEEP_AFTER_END_MS : end);
}

/**
 * Keeps a checkout link open as long as the payment it now shows: call it once a charge made
 * from the page has an expiry (a VA's, a QRIS code's). Never shortens the link; safe to repeat.
 */
export async function extendCheckoutLink(ctx: Pick<DataContext, 'em'>, session: HostedSession, paymentExpiresAt: Date | null): Promise<void> {
  if (!paymentExpiresAt || paymentExpiresAt.getTime() <= session.expiresAt.getTime()) return;
  await ctx.em.nativeUpdate(HostedSession, { id: session.id, expiresAt: { $lt: paymentExpiresAt } }, { expiresAt: paymentExpiresAt });
  session.expiresAt = paymentExpiresAt;
}

/**
 * Where a portal link stands for a browser (by the secret of its page cookie, if any):
 * `landing` while nobody has claimed it and it is young enough, `open` for the browser that
 * claimed it while it is in use, `gone` otherwise. Reading it never claims anything: link
 * previews, mail scanners, HEAD requests and lost answers leave the link as it was.
 */
export function portalAccess(session: HostedSession, browserSecret: string | null, now: Date): 'landing' | 'open' | 'gone' {
  if (session.user.disabledAt) return 'gone';
  if (!session.openedAt) return now < session.expiresAt ? 'landing' : 'gone';
  if (browserSecret === null || !sameSecret(browserSecret, session.browserSecretHash)) return 'gone';
  return now < session.expiresAt ? 'open' : 'gone';
}

/**
 * The landing page's button: binds an unclaimed portal link to this browser. One conditional
 * UPDATE (unclaimed and not expired), so that of forty claims at once exactly one wins. The
 * browser that claimed it may send its claim again (its answer was lost): that is not a second
 * claim. True when this browser holds the portal now.
 */
export async function claimPortalLink(ctx: Pick<DataContext, 'em' | 'clock'>, session: HostedSession, browserSecret: string): Promise<boolean> {
  const now = ctx.clock.now();
  const state = portalAccess(session, browserSecret, now);
  if (state === 'open') return true;
  if (state !== 'landing') return false;
  const expiresAt = new Date(now.getTime() + PORTAL_IDLE_MINUTES * 60_000);
  const claimed = await ctx.em.nativeUpdate(
    HostedSession,
    { id: session.id, openedAt: null, expiresAt: { $gt: now } },
    { openedAt: now, lastUsedAt: now, browserSecretHash: sha256(browserSecret), expiresAt },
  );
  if (claimed !== 1) return false;
  Object.assign(session, { openedAt: now, lastUsedAt: now, browserSecretHash: sha256(browserSecret), expiresAt });
  return true;
}

/**
 * A use of a claimed portal: it lives PORTAL_IDLE_MINUTES from now. Written at most once a
 * minute, so a page's requests do not each write a row.
 */
export async function touchPortalLink(ctx: Pick<DataContext, 'em' | 'clock'>, session: HostedSession): Promise<void> {
  const now = ctx.clock.now();
  if (session.lastUsedAt && now.getTime() - session.lastUsedAt.getTime() < LAST_USE_EVERY_MS) return;
  const expiresAt = new Date(now.getTime() + PORTAL_IDLE_MINUTES * 60_000);
  await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { lastUsedAt: now, expiresAt });
  Object.assign(session, { lastUsedAt: now, expiresAt });
}

/** Keeps the page's language (`?lang=`) for its later reloads and redirects. */
export async function rememberLanguage(ctx: Pick<DataContext, 'em'>, session: HostedSession, language: 'id' | 'en'): Promise<void> {
  if (session.language === language) return;
  await ctx.em.nativeUpdate(HostedSession, { id: session.id }, { language });
  session.language = language;
}

/**
 * Forgets dead links, KEEP_AFTER_END_HOURS after their end: checkouts past their expiry (a
 * payment shown on the page extends it, see extendCheckoutLink), portals unclaimed past
 * PORTAL_CLAIM_MINUTES or unused for PORTAL_IDLE_MINUTES (both kept in `expiresAt`). Run by
 * the server's hourly sweep, so that links asked for and never used cannot fill the table.
 */
export async function deleteExpiredHostedSessions(ctx: Pick<DataContext, 'em'>, now: Date): Promise<number> {
  return ctx.em.nativeDelete(HostedSession, { expiresAt: { $lt: new Date(now.getTime() - KEEP_AFTER_END_MS) } });
}
