import type { Context } from 'koa';
import type { Invoice } from '../../db/entities/invoice.js';
import { GATEWAY_PAYMENT_TYPES, BANKS, type GatewayPaymentType } from '../../gateway/types.js';
import { isPositive } from '../../domain/money.js';
import type { ServiceContext } from '../../services/context.js';
import { classifyFailure } from '../../services/common/classify-failure.js';
import { lineWordsFor } from '../../services/documents/line-words.js';
import type { CheckoutProgress, ChoiceResult } from '../../services/hosted/checkout.js';
import { findPageInvoice, followInvoice, invoiceProgress, payInvoiceChoice } from '../../services/hosted/invoice-checkout.js';
import { invoiceOfToken } from '../../services/hosted/invoice-links.js';
import { cardScript, chosenMethod, declineReason, methodChoices } from './checkout-page.js';
import { pickLanguage, pageFormat, translator, type Language, type PageFormat, type Translate } from './language.js';
import { browserSecret, csrfMatches, csrfToken } from './page-access.js';
import { failureMessage, frameFor, readForm, sendRefusal, withLang, type PageDeps } from './page-kit.js';
import { sendPage } from './render.js';

/**
 * An open invoice's hosted page, `/pay/inv_…/` (the token is the invoice's id and its HMAC,
 * src/services/hosted/invoice-links.ts): the checkout's template and method choice, the
 * invoice's lines and total instead of a plan. Its GET and HEAD only read; its form's submit
 * pays the invoice as `POST /payments/charge/` does. Nothing is stored for the link, so the
 * page's language lives in its `?lang=`, which every form, redirect and poll keeps.
 */
interface InvoicePage {
  ctx: Context;
  deps: PageDeps;
  services: ServiceContext;
  invoice: Invoice;
  lang: Language;
  t: Translate;
  format: PageFormat;
  path: string;
  browser: string;
  csrf: string;
}

/** What the CSRF token is bound to: the invoice's page, never a checkout's or a portal's. */
const csrfSubject = (invoice: Invoice) => ({ id: `invoice:${invoice.id}` });

async function openInvoicePage(ctx: Context, deps: PageDeps, token: string): Promise<InvoicePage | null> {
  const services = deps.services();
  const invoiceId = invoiceOfToken(deps.config, token);
  const invoice = invoiceId ? await findPageInvoice(services, invoiceId) : null;
  // A forged token, another invoice's, or an invoice no subscription owns: no such page.
  if (!invoice || !invoice.subscription) {
    sendRefusal(ctx, deps, 'unknown');
    return null;
  }
  if (invoice.user.disabledAt) {
    sendRefusal(ctx, deps, 'gone');
    return null;
  }
  const lang = pickLanguage(ctx);
  const browser = browserSecret(ctx, 'invoice', token, deps.config.secureCookies);
  return {
    ctx, deps, services, invoice, lang,
    t: translator(lang),
    format: pageFormat(lang, deps.config.documents.timeZone),
    path: `/pay/${token}/`,
    browser,
    csrf: csrfToken(deps.csrfKey, csrfSubject(invoice), browser),
  };
}

/** Every method the hosted checkout offers; the card only where it can be tokenized. */
function offeredTypes(deps: PageDeps): GatewayPaymentType[] {
  return GATEWAY_PAYMENT_TYPES.filter((type) => type !== 'credit_card' || cardScript(deps) !== null);
}

/** The invoice as the page's summary shows it: each line, the discount, PPN and the total. */
function invoiceSummary(page: InvoicePage) {
  const { t, format, invoice } = page;
  const money = (amount: string) => format.money(amount, invoice.currency);
  const words = lineWordsFor({ locale: page.lang === 'en' ? 'en-US' : 'id-ID', timeZone: page.deps.config.documents.timeZone });
  const rows: { label: string; value: string; total?: boolean }[] = invoice.lines.getItems().map((line) => ({ label: words.line(line, invoice.currency), value: money(line.amount) }));
  if (isPositive(invoice.discountAmount)) rows.push({ label: t('checkout.discount', { code: '' }).replace(/\s*\(\)$/, ''), value: `\u2212${money(invoice.discountAmount)}` });
  const rate = invoice.taxRate.replace(/\.?0+$/, '');
  if (invoice.taxBehavior === 'exclusive') {
    rows.push({ label: t('checkout.subtotal'), value: money(invoice.taxBase) });
    rows.push({ label: t('checkout.tax', { rate }), value: money(invoice.taxAmount) });
  } else if (invoice.taxBehavior === 'inclusive') {
    rows.push({ label: t('checkout.tax_included', { rate }), value: money(invoice.taxAmount) });
  }
  const total = money(invoice.totalAmount);
  rows.push({ label: t('checkout.total'), value: total, total: true });
  const day = (date: string) => format.date(new Date(`${date}T00:00:00Z`));
  return {
    heading: t('invoice_page.heading'),
    name: invoice.number,
    every: t('invoice_page.issued', { date: day(invoice.issueDate), due: day(invoice.dueDate) }),
    trial: null,
    trialTerms: [],
    rows,
    taxNote: invoice.taxBehavior === 'none' ? null : t('checkout.tax_note', { rate }),
    submitLabel: t('checkout.pay', { amount: total }),
  };
}

interface RenderOptions {
  error?: string | null;
  notice?: string | null;
  cardError?: string | null;
  status?: number;
  chosen?: { paymentType: string; bank?: string };
}

function renderInvoice(page: InvoicePage, progress: CheckoutProgress, opts: RenderOptions = {}): void {
  const { t, format } = page;
  const card = cardScript(page.deps);
  const cardError = opts.cardError ?? (progress.failure === 'card_declined' ? t('card.declined') : null);
  const methods = methodChoices(t, offeredTypes(page.deps), { cardError, chosen: opts.chosen });
  const chooses = progress.state === 'choose' || progress.state === 'failed';
  const switches = (progress.state === 'pending' || progress.state === 'confirming') && progress.orderId !== null;
  const scripts = ['/hosted-assets/checkout.js'];
  if ((chooses || switches) && card && methods.some((m) => m.value === 'credit_card')) scripts.unshift(card.src);
  const item = invoiceSummary(page);
  const doneText = progress.state === 'paid' ? t('invoice_page.paid') : progress.state === 'nothing_due' ? t('invoice_page.nothing_due') : null;
  const title = t('invoice_page.title', { number: page.invoice.number });
  sendPage(
    page.ctx,
    'checkout',
    {
      ...frameFor(page.ctx, page.deps, page.lang, t, title),
      title,
      scripts,
      clientKey: card?.clientKey,
      gatewayEnvironment: card?.environment,
      item,
      error: opts.error ?? null,
      notice: opts.notice ?? null,
      terms: null,
      fieldErrors: {},
      cardError,
      state: progress.state,
      chooses,
      switches,
      replaces: switches ? progress.orderId : null,
      threeDsUrl: null,
      trialStarted: null,
      doneText,
      methods,
      banks: BANKS,
      bank: opts.chosen?.bank ?? null,
      csrf: page.csrf,
      formAction: withLang(page, page.path),
      statusUrl: withLang(page, `${page.path}status`),
      submitLabel: item.submitLabel,
      paymentType: progress.paymentType,
      details: progress.details,
      due: progress.amount && progress.currency ? format.money(progress.amount, progress.currency) : null,
      expiresAt: progress.expiresAt?.toISOString() ?? null,
      expiresAtText: progress.expiresAt ? format.dateTime(progress.expiresAt) : null,
      successUrl: null,
      cancelUrl: null,
    },
    opts.status ?? 200,
    page.deps.gatewayOrigin,
  );
}

/** GET and HEAD: where the invoice stands. Never charges, claims or writes anything. */
export async function showInvoicePage(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openInvoicePage(ctx, deps, token);
  if (!page) return;
  renderInvoice(page, await invoiceProgress(page.services, page.invoice.id));
}

/** Polled by the page: `{state, next, order_id}`; `next`, once paid, is the page itself (which says so). */
export async function invoicePageStatus(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openInvoicePage(ctx, deps, token);
  if (!page) return;
  const progress = await followInvoice(page.services, page.invoice.id);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { state: progress.state, next: progress.state === 'paid' ? withLang(page, page.path) : null, order_id: progress.orderId };
}

/** The customer's choice: checked, then paid by the same use case as POST /payments/charge/, then shown (303 to the page). */
export async function chooseInvoicePayment(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openInvoicePage(ctx, deps, token);
  if (!page) return;
  const form = await readForm(ctx);
  const current = () => invoiceProgress(page.services, page.invoice.id);
  if (!csrfMatches(deps.csrfKey, csrfSubject(page.invoice), page.browser, form.csrf_token)) {
    return renderInvoice(page, await current(), { error: page.t('error.csrf_failed'), status: 403 });
  }
  const method = chosenMethod(form, offeredTypes(deps));
  if (typeof method === 'string') return renderInvoice(page, await current(), { error: page.t('error.validation_error', { detail: method }), status: 400 });
  let result: ChoiceResult;
  try {
    result = await payInvoiceChoice(page.services, page.invoice, {
      paymentType: method.paymentType,
      bank: method.bank,
      token: method.paymentType === 'credit_card' ? (form.token ?? '') : undefined,
      replaces: form.replaces || undefined,
    });
  } catch (err) {
    const after = await current();
    // The gateway's answer to the charge was lost: the page follows that charge, offering no second one.
    if (after.state === 'confirming') return seeThePage(page);
    const failure = classifyFailure(err);
    if (failure?.code === 'card_declined') {
      return renderInvoice(page, after, { cardError: page.t('card.declined_reason', { reason: declineReason(failure.message) }), status: 422 });
    }
    return renderInvoice(page, after, { error: failureMessage(page.t, err), status: 400, chosen: { paymentType: method.paymentType, bank: method.bank } });
  }
  switch (result.outcome) {
    case 'earlier_paid': {
      const now = await current();
      return renderInvoice(page, now, { notice: now.state === 'paid' ? page.t('invoice_page.switch_earlier_paid') : null });
    }
    case 'earlier_not_canceled':
      return renderInvoice(page, await current(), { error: page.t('pay.switch_not_canceled'), status: 409 });
    default:
      // Charged, or another submit is charging or has: the page shows where the invoice stands.
      return seeThePage(page);
  }
}

function seeThePage(page: InvoicePage): void {
  page.ctx.status = 303;
  page.ctx.redirect(withLang(page, page.path));
}
