import type { Context } from 'koa';
import type { Config } from '../../config.js';
import type { HostedSession, HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { ServiceContext } from '../../services/context.js';
import type { RenderPdf } from '../../services/documents/document-renderer.js';
import { classifyFailure } from '../../services/common/classify-failure.js';
import { readRawBytes } from '../body.js';
import { claimPortalLink, rememberLanguage } from '../../services/hosted/hosted-sessions.js';
import { askedLanguage, pickLanguage, pageFormat, translator, type Language, type PageFormat, type Translate } from './language.js';
import { csrfMatches, csrfToken, pageFor, pagePath } from './page-access.js';
import { sendPage, type PageFrame } from './render.js';
import { fieldErrorText } from './field-errors.js';
import type { Messages } from './messages/id.js';

/** What every hosted page handler is given. */
export interface PageDeps {
  config: Config;
  services: () => ServiceContext;
  /** The app's first signing key: the CSRF tokens' HMAC key. */
  csrfKey: string;
  /** Origin of the gateway's script, QR images and 3-D Secure page (the CSP allows it). */
  gatewayOrigin: string | null;
  /** The development simulator is mounted (at /_simulator): it stands in for the gateway's card script. */
  simulator: boolean;
  /** Renders invoice and credit-note PDFs (the server's worker pool). */
  renderPdf: RenderPdf;
}

/** One request to one page: its session, language, formats and the frame every template shares. */
export interface PageRequest {
  ctx: Context;
  deps: PageDeps;
  services: ServiceContext;
  session: HostedSession;
  token: string;
  lang: Language;
  t: Translate;
  format: PageFormat;
  /** The page's own path, `/pay/TOKEN/` or `/portal/TOKEN/`. */
  path: string;
  /** This browser's secret for the page (its cookie); `csrf` is derived from it. */
  browser: string;
  csrf: string;
  frame(title: string): PageFrame;
  send(template: string, data: Record<string, unknown>, status?: number): void;
}

/** Forms are small: a few fields and a token. */
const MAX_FORM_BYTES = 8 * 1024;

/** A POSTed form, read as URL-encoded fields (the first value of each name). */
export async function readForm(ctx: Context): Promise<Record<string, string>> {
  const raw = (await readRawBytes(ctx, MAX_FORM_BYTES)).toString('utf8');
  const fields: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(raw)) if (!(name in fields)) fields[name] = value;
  return fields;
}

export function frameFor(ctx: Context, deps: PageDeps, lang: Language, t: Translate, title: string): PageFrame {
  const other = lang === 'id' ? 'en' : 'id';
  return { lang, t, company: deps.config.documents.companyName, title, switchUrl: `${ctx.path}?lang=${other}` };
}

/**
 * A page that says the link is unknown (404) or no longer opens (410). A known link's page is
 * in the language chosen on it and leads back to the shop: a checkout's cancel_url, a portal's
 * return_url.
 */
export function sendRefusal(ctx: Context, deps: PageDeps, refusal: 'unknown' | 'gone', session: HostedSession | null = null): void {
  const lang = pickLanguage(ctx, session?.language ?? null);
  const t = translator(lang);
  const title = refusal === 'gone' ? t('gone.title') : t('unknown.title');
  const backUrl = refusal === 'gone' && session ? (session.kind === 'checkout' ? session.cancelUrl : session.returnUrl) : null;
  sendPage(
    ctx,
    'message',
    { ...frameFor(ctx, deps, lang, t, title), switchUrl: null, message: goneMessage(t, refusal, session), backUrl, backLabel: t('gone.back') },
    refusal === 'gone' ? 410 : 404,
  );
}

/** Why the page does not open, as precisely as the link tells: a checkout ran out, a portal is another browser's or ran out. */
function goneMessage(t: Translate, refusal: 'unknown' | 'gone', session: HostedSession | null): string {
  if (refusal === 'unknown') return t('unknown.body');
  if (!session) return t('gone.body');
  return session.kind === 'checkout' ? t('gone.checkout') : t('gone.portal');
}

function pageRequest(ctx: Context, deps: PageDeps, services: ServiceContext, session: HostedSession, token: string, browser: string): PageRequest {
  const lang = pickLanguage(ctx, session.language);
  const t = translator(lang);
  const page: PageRequest = {
    ctx, deps, services, session, token, lang, t,
    format: pageFormat(lang, deps.config.documents.timeZone),
    path: pagePath(session.kind, token),
    browser,
    csrf: csrfToken(deps.csrfKey, session, browser),
    frame: (title) => frameFor(ctx, deps, lang, t, title),
    send: (template, data, status = 200) => sendPage(ctx, template, { ...page.frame(String(data.title ?? '')), ...data }, status, deps.gatewayOrigin),
  };
  return page;
}

/** A portal link nobody has claimed: a page whose one button (a POST) claims it for this browser. */
function sendLanding(page: PageRequest, error: string | null = null, status = 200): void {
  page.send(
    'portal-landing',
    { title: page.t('landing.title'), csrf: page.csrf, formAction: withLang(page, page.path), returnUrl: page.session.returnUrl, error },
    status,
  );
}

/**
 * Opens the page named by the path's token for this request, or answers the refusal itself
 * (null): a 404 or 410 page, or for a portal nobody has claimed its landing page (any other
 * request is sent there). The page's language is `?lang=` (then kept on the link for its
 * reloads and redirects), else the one chosen earlier, else the browser's.
 */
export async function openPage(ctx: Context, deps: PageDeps, kind: HostedSessionKind, token: string): Promise<PageRequest | null> {
  const services = deps.services();
  const access = await pageFor(ctx, services, kind, token, deps.config.secureCookies);
  if (access.state === 'refused') {
    sendRefusal(ctx, deps, access.refusal, access.session);
    return null;
  }
  const asked = askedLanguage(ctx);
  if (asked) await rememberLanguage(services, access.session, asked);
  const page = pageRequest(ctx, deps, services, access.session, token, access.browser);
  if (access.state === 'landing') {
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && ctx.path === page.path) sendLanding(page);
    else {
      ctx.status = 303;
      ctx.redirect(withLang(page, page.path));
    }
    return null;
  }
  return page;
}

/**
 * The portal landing page's button (POST to the page's own path): with its CSRF token, this
 * browser claims the link, then goes on to the portal (303). Another browser that claimed it
 * first leaves this one a 410 that leads back to the shop. A claim sent again by the browser
 * that holds the portal (its first answer was lost) just goes on to the portal.
 */
export async function claimPortalPage(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const services = deps.services();
  const access = await pageFor(ctx, services, 'portal', token, deps.config.secureCookies);
  if (access.state === 'refused') return sendRefusal(ctx, deps, access.refusal, access.session);
  const page = pageRequest(ctx, deps, services, access.session, token, access.browser);
  if (access.state === 'landing') {
    const form = await readForm(ctx);
    if (!formIsGenuine(page, form)) return sendLanding(page, page.t('error.csrf_failed'), 403);
    if (!(await claimPortalLink(services, page.session, page.browser))) return sendRefusal(ctx, deps, 'gone', page.session);
  }
  ctx.status = 303;
  ctx.redirect(withLang(page, page.path));
}

/** A form's CSRF token, checked before anything it asks is done. */
export function formIsGenuine(page: PageRequest, form: Record<string, string>): boolean {
  return csrfMatches(page.deps.csrfKey, page.session, page.browser, form.csrf_token);
}

/** The catalogue key for what a not-found names ("Plan not found.", "Credit note not found."). */
function notFoundKey(message: string): keyof Messages {
  const things: [RegExp, keyof Messages][] = [
    [/^plan\b/i, 'error.not_found'],
    [/^(active )?subscription\b/i, 'error.not_found.subscription'],
    [/^invoice\b/i, 'error.not_found.invoice'],
    [/^credit note\b/i, 'error.not_found.credit_note'],
    [/^payment\b/i, 'error.not_found.payment'],
    [/^top-up\b/i, 'error.not_found.topup'],
  ];
  return things.find(([pattern]) => pattern.test(message))?.[1] ?? 'error.not_found.other';
}

/** A state refusal in the page's words: the rules' known refusals by their meaning, any other plainly. */
function stateMessage(t: Translate, message: string): string {
  const status = /^Cannot [\w ]+ a subscription that is ([\w ]+)\.$/.exec(message)?.[1]?.replace(/ /g, '_');
  if (status && ['pending', 'trialing', 'active', 'paused', 'past_due', 'canceled', 'expired'].includes(status)) {
    return t('error.state.status', { status: t(`status.${status}` as keyof Messages) });
  }
  if (/^The subscription is already on /.test(message)) return t('error.state.same_plan');
  if (/no saved card/.test(message)) return t('error.state.no_card');
  if (/no plan change to withdraw/.test(message)) return t('error.state.no_change');
  return t('error.state.other');
}

/**
 * A refused action, said in the page's language: never the API's English or its field names.
 * A rule's field errors read as sentences (formFieldErrors puts them next to their field); a
 * not-found names what was not found.
 */
export function failureMessage(t: Translate, err: unknown): string {
  const failure = classifyFailure(err);
  if (!failure) throw err;
  switch (failure.code) {
    case 'subscription_exists':
    case 'insufficient_funds':
    case 'csrf_failed':
      return t(`error.${failure.code}`);
    case 'not_found':
      return t(notFoundKey(failure.message));
    case 'validation_error':
      return t('error.validation_error', { detail: failure.errors.length > 0 ? failure.errors.map((e) => fieldErrorText(t, e)).join(' ') : t('field.invalid') });
    case 'nothing_due':
      return t('error.nothing_due');
    case 'invalid_state':
    case 'refund_refused':
      return stateMessage(t, failure.message);
    case 'card_declined':
      return t('card.declined_reason', { reason: failure.message.replace(/^The card was declined:\s*/, '').replace(/\.$/, '') });
    case 'gateway_error':
    case 'gateway_unavailable':
      return t('error.gateway');
    default:
      return t('error.other');
  }
}

/** One of the page's URLs with `params`, keeping the page's `?lang=` choice when one was made. */
export function withLang(page: Pick<PageRequest, 'ctx' | 'lang'>, path: string, params: Record<string, string> = {}): string {
  const query = new URLSearchParams(params);
  if (page.ctx.query.lang === 'en' || page.ctx.query.lang === 'id') query.set('lang', page.lang);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
