import type { Context } from 'koa';
import type { Config } from '../../config.js';
import type { HostedSession, HostedSessionKind } from '../../db/entities/hosted-session.js';
import type { ServiceContext } from '../../services/context.js';
import type { RenderPdf } from '../../services/documents/document-renderer.js';
import { classifyFailure } from '../../services/common/classify-failure.js';
import { readRawBytes } from '../body.js';
import { pickLanguage, pageFormat, translator, type Language, type PageFormat, type Translate } from './language.js';
import { csrfMatches, csrfToken, pageFor, pagePath } from './page-access.js';
import { sendPage, type PageFrame } from './render.js';

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

function frameFor(ctx: Context, deps: PageDeps, lang: Language, t: Translate, title: string): PageFrame {
  const other = lang === 'id' ? 'en' : 'id';
  return { lang, t, company: deps.config.documents.companyName, title, switchUrl: `${ctx.path}?lang=${other}` };
}

/** A page that says the link is unknown (404) or no longer opens (410), in the visitor's language. */
export function sendRefusal(ctx: Context, deps: PageDeps, refusal: 'unknown' | 'gone'): void {
  const lang = pickLanguage(ctx);
  const t = translator(lang);
  const title = refusal === 'gone' ? t('gone.title') : t('unknown.title');
  sendPage(ctx, 'message', { ...frameFor(ctx, deps, lang, t, title), switchUrl: null, message: refusal === 'gone' ? t('gone.body') : t('unknown.body') }, refusal === 'gone' ? 410 : 404);
}

/**
 * Opens the page named by the path's token for this browser, or answers the refusal itself
 * (null). The page's language stays as chosen: `?lang=` on any of its URLs, else the browser's.
 */
export async function openPage(ctx: Context, deps: PageDeps, kind: HostedSessionKind, token: string): Promise<PageRequest | null> {
  const services = deps.services();
  const opened = await pageFor(ctx, services, kind, token, deps.config.secureCookies);
  if ('refusal' in opened) {
    sendRefusal(ctx, deps, opened.refusal);
    return null;
  }
  const lang = pickLanguage(ctx);
  const t = translator(lang);
  const session = opened.session;
  const path = pagePath(kind, token);
  const page: PageRequest = {
    ctx, deps, services, session, token, lang, t,
    format: pageFormat(lang, deps.config.documents.timeZone),
    path,
    csrf: csrfToken(deps.csrfKey, session),
    frame: (title) => frameFor(ctx, deps, lang, t, title),
    send: (template, data, status = 200) => sendPage(ctx, template, { ...page.frame(String(data.title ?? '')), ...data }, status, deps.gatewayOrigin),
  };
  return page;
}

/** A form's CSRF token, checked before anything it asks is done. */
export function formIsGenuine(page: PageRequest, form: Record<string, string>): boolean {
  return csrfMatches(page.deps.csrfKey, page.session, form.csrf_token);
}

/** A refused action, said in the page's language: the code's message, with the rule's detail where it helps. */
export function failureMessage(t: Translate, err: unknown): string {
  const failure = classifyFailure(err);
  if (!failure) throw err;
  const detail = failure.errors.length > 0 ? failure.errors.map((e) => `${e.field}: ${e.message}`).join('; ') : failure.message;
  switch (failure.code) {
    case 'subscription_exists':
    case 'insufficient_funds':
    case 'not_found':
    case 'csrf_failed':
      return t(`error.${failure.code}`);
    case 'validation_error':
      return t('error.validation_error', { detail });
    case 'invalid_state':
    case 'nothing_due':
    case 'refund_refused':
      return t('error.invalid_state', { detail: failure.message });
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
export function withLang(page: PageRequest, path: string, params: Record<string, string> = {}): string {
  const query = new URLSearchParams(params);
  if (page.ctx.query.lang === 'en' || page.ctx.query.lang === 'id') query.set('lang', page.lang);
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
