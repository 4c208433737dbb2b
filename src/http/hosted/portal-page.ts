import type { Context } from 'koa';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { ValidationError } from '../../domain/errors.js';
import { isPositive, negate, subtract } from '../../domain/money.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { taxInvoice } from '../../domain/tax.js';
import { parseTypedAmount } from '../../domain/typed-amount.js';
import { creditNotePdf } from '../../services/documents/credit-note-pdf.js';
import { lineWordsFor } from '../../services/documents/line-words.js';
import { portalInvoiceRows } from './portal-invoices.js';
import { ledgerDescription } from '../../services/wallet/ledger-words.js';
import { invoicePdf, type PdfFile } from '../../services/documents/invoice-pdf.js';
import { createCheckoutSession } from '../../services/hosted/hosted-sessions.js';
import { portalOverview, type PortalOverview } from '../../services/hosted/portal.js';
import { chargeSubscription } from '../../services/subscriptions/charge-subscription.js';
import { changeSubscriptionPlan, PlanChangeQuoteRefused, previewPlanChange, withdrawPlanChange } from '../../services/subscriptions/change-subscription-plan.js';
import { changeSubscriptionQuantity, previewQuantityChange, QuantityChangeMoved } from '../../services/subscriptions/change-subscription-quantity.js';
import { MAX_QUANTITY } from '../../services/subscriptions/create-subscription.js';
import { discountCovers } from '../../domain/discount.js';
import { pauseSubscription } from '../../services/subscriptions/pause-subscription.js';
import { resumeSubscription } from '../../services/subscriptions/resume-subscription.js';
import { hostedOrigin } from '../handlers/hosted.js';
import { formFieldErrors, typedAmountText } from './field-errors.js';
import { cancelFromPortal, confirmCancelView, undoCancelView, type CancelWhen } from './portal-cancel.js';
import { failureMessage, formIsGenuine, openPage, readForm, withLang, type PageDeps, type PageRequest } from './page-kit.js';
import { readQuote, signQuote } from './plan-change-quote.js';

/** What the portal's forms may ask; each runs the same use case as the API, as the link's user. */
const ACTIONS = ['change-plan', 'withdraw-change', 'change-quantity', 'cancel', 'undo-cancel', 'pause', 'resume', 'pay', 'topup'] as const;
type PortalAction = (typeof ACTIONS)[number];

/** What a render shows beside the portal itself. */
interface RenderOptions {
  /** The `done` of the redirect after an action: its notice is worded from the state now. */
  done?: string | null;
  error?: string | null;
  status?: number;
  /** Field errors by the form field's name, in the page's language, and what was typed there. */
  fieldErrors?: Record<string, string>;
  values?: Record<string, string>;
  /** A plan to preview a change to (else `?change=`). */
  previewPlan?: string | null;
  /** A number of units to preview a change to (else `?quantity=`). */
  previewQuantity?: string | null;
  /** A cancel button was pressed: ask to confirm it (portal-cancel.ts). */
  confirmCancel?: CancelWhen | null;
}

function every(page: PageRequest, plan: Plan): string {
  return plan.interval === 1 ? page.t(`checkout.every1.${plan.intervalUnit}`) : page.t(`checkout.every.${plan.intervalUnit}`, { n: plan.interval });
}

/** A plan's price as each period is billed: PPN added where the plan adds it (and the seller charges it). */
function billedPrice(page: PageRequest, plan: Plan) {
  const tax = taxInvoice(plan.price, plan.taxBehavior, plan.currency, page.deps.config.tax.pkp);
  return { tax, taxed: tax.taxBehavior !== 'none', total: page.format.money(tax.total, plan.currency) };
}

/** One line saying how the plan's PPN is worked out, with its own numbers; null for an untaxed plan. */
function taxNote(page: PageRequest, plan: Plan): string | null {
  const { tax, taxed } = billedPrice(page, plan);
  if (!taxed) return null;
  const money = (amount: string) => page.format.money(amount, plan.currency);
  return tax.taxBehavior === 'exclusive'
    ? page.t('portal.tax_note_exclusive', { plan: plan.name, price: money(plan.price), base: money(tax.otherTaxBase), tax: money(tax.taxAmount), total: money(tax.total) })
    : page.t('portal.tax_note_inclusive', { plan: plan.name, total: money(tax.total), tax: money(tax.taxAmount), dpp: money(tax.taxBase), base: money(tax.otherTaxBase) });
}

function subscriptionView(page: PageRequest, overview: PortalOverview) {
  const sub = overview.subscription;
  if (!sub) return null;
  const { t, format } = page;
  const live = ['pending', 'trialing', 'active', 'paused', 'past_due'].includes(sub.status);
  const renews = live && !sub.cancelAtPeriodEnd && (sub.status === 'active' || sub.status === 'trialing');
  const periodEnd = sub.currentPeriodEnd ? format.date(sub.currentPeriodEnd) : null;
  const pending = overview.pendingPayment;
  const price = billedPrice(page, sub.plan);
  const change = pendingChangeView(page, sub, overview);
  // What is still owed: the payment waiting for the customer, else an open invoice nobody is paying yet.
  const openInvoice = overview.invoices.find((i) => i.status === 'open' && i.subscription?.id === sub.id) ?? null;
  const openBill = pending ? { amount: pending.grossAmount, currency: pending.currency } : openInvoice ? { amount: openInvoice.totalAmount, currency: openInvoice.currency } : null;
  let endsAt: string | null = null;
  if (live && sub.cancelAtPeriodEnd && periodEnd) {
    if (change) {
      endsAt = t('portal.ends_at_pending_change', { date: periodEnd, plan: change.planName, amount: change.amount, changeEnd: change.periodEnd });
    } else if (openBill) {
      endsAt = t('portal.ends_at_open_bill', { date: periodEnd, amount: format.money(openBill.amount, openBill.currency) });
    } else {
      endsAt = t('portal.ends_at', { date: periodEnd });
    }
  }
  return {
    id: sub.id,
    live,
    ...unitsView(page, sub),
    planName: sub.plan.name,
    price: price.total,
    priceTaxed: price.taxed,
    taxNote: taxNote(page, sub.plan),
    every: every(page, sub.plan),
    statusText: t(`status.${sub.status}`),
    trialEnd: sub.status === 'trialing' && sub.trialEnd ? format.date(sub.trialEnd) : null,
    nextBilling: renews ? periodEnd : null,
    periodEnd,
    endsAt,
    scheduledPlan: sub.pendingPlan?.name ?? null,
    change,
    canChange: subscriptionActions.can(sub, 'change_plan'),
    canCancelAtEnd: subscriptionActions.can(sub, 'cancel_at_period_end') && !sub.cancelAtPeriodEnd,
    undoCancel: undoCancelView(page, sub),
    canPause: subscriptionStates.can(sub, 'pause'),
    canResume: subscriptionStates.can(sub, 'resume'),
    canPay: subscriptionActions.can(sub, 'charge') && !pending && openInvoice !== null,
  };
}

/**
 * A per-unit subscription's units (and the units it drops to at the period's end), and the
 * discount it redeemed, as the portal shows them.
 */
function unitsView(page: PageRequest, sub: Subscription) {
  const { t, format } = page;
  const money = (amount: string) => format.money(amount, sub.plan.currency);
  const perUnit = sub.plan.perUnit;
  const discount = sub.discount && discountCovers(sub.discount, sub.plan, page.services.clock.now()) ? sub.discount : null;
  const label = discount?.promotion_code ?? discount?.coupon ?? '';
  return {
    perUnit,
    quantity: sub.quantity,
    quantityText: perUnit ? t('checkout.units', { n: sub.quantity, price: money(sub.plan.price) }) : null,
    pendingQuantityText: perUnit && sub.pendingQuantity !== null && sub.currentPeriodEnd
      ? t('portal.pending_quantity', { n: sub.pendingQuantity, date: format.date(sub.currentPeriodEnd) })
      : null,
    discountText: discount
      ? discount.percent_off !== null
        ? t('portal.discount_percent', { code: label, percent: discount.percent_off.replace(/\.?0+$/, '') })
        : t('portal.discount_amount', { code: label, amount: money(discount.amount_off ?? '0') })
      : null,
    canChangeQuantity: perUnit && subscriptionActions.can(sub, 'change_plan'),
    maxQuantity: MAX_QUANTITY,
  };
}

/** Units as amounts are written, in Indonesian digits in either language ("12.500", "3,25"). */
const UNITS_FORMAT = new Intl.NumberFormat('id-ID', { maximumFractionDigits: 6 });

/** The usage so far of the live subscription's window (per charge: the metric, units, amount); null when its plan has no charges. */
function usageView(page: PageRequest, overview: PortalOverview) {
  const usage = overview.usage;
  if (!usage) return null;
  const { t, format } = page;
  const money = (amount: string) => format.money(amount, usage.currency);
  const from = usage.from ? format.dateTime(usage.from) : null;
  const to = usage.to ? format.dateTime(usage.to) : null;
  return {
    window: from === null ? t('portal.usage_not_started') : to ? t('portal.usage_window', { from, to }) : t('portal.usage_window_open', { from }),
    charges: usage.charges.map((c) => ({
      metric: c.metric.code,
      name: c.metric.name,
      // Intl formats a decimal string exactly (no float on the way).
      units: UNITS_FORMAT.format(c.units as unknown as number),
      amount: money(c.amount),
    })),
    total: money(usage.amount),
  };
}

/** What a change to `wanted` units would cost or credit, priced as the change itself prices it. */
async function quantityPreviewView(page: PageRequest, overview: PortalOverview, typed: string) {
  const sub = overview.subscription!;
  const wanted = /^\s*\d{1,6}\s*$/.test(typed) ? Number(typed) : Number.NaN;
  const preview = await previewQuantityChange(page.services, page.session.user, sub.id, wanted);
  const money = (amount: string) => page.format.money(amount, sub.plan.currency);
  return {
    quantity: wanted,
    current: sub.quantity,
    trial: sub.status === 'trialing',
    more: wanted > sub.quantity,
    same: wanted === sub.quantity,
    due: preview.amountDue ? money(preview.amountDue) : null,
    dueRaw: preview.amountDue,
    credit: preview.credit ? money(preview.credit) : null,
    creditRaw: preview.credit,
    periodEnd: sub.currentPeriodEnd ? page.format.date(sub.currentPeriodEnd) : null,
  };
}

/** A change waiting for its payment: what it moves to, what it waits for, and until when it would run. */
function pendingChangeView(page: PageRequest, sub: Subscription, overview: PortalOverview) {
  const pending = sub.pendingChange;
  if (!pending || !sub.pendingChangePlan) return null;
  const payment = overview.pendingPayment?.id === pending.payment_id ? overview.pendingPayment : null;
  return {
    /** A change of units (change-quantity) rather than of plan: the units it sets. */
    quantity: pending.quantity ?? null,
    planName: sub.pendingChangePlan.name,
    amount: payment ? page.format.money(payment.grossAmount, payment.currency) : page.format.money(subtract(pending.charge, pending.credit), sub.plan.currency),
    paymentShown: payment !== null,
    periodEnd: page.format.date(new Date(pending.period_end)),
  };
}

async function previewView(page: PageRequest, overview: PortalOverview, planSlug: string) {
  const sub = overview.subscription!;
  const preview = await previewPlanChange(page.services, page.session.user, sub.id, planSlug);
  const currency = preview.plan.currency;
  const money = (amount: string) => page.format.money(amount, currency);
  const quote = signQuote(page.deps.csrfKey, {
    sessionId: page.session.id,
    subscriptionId: sub.id,
    planId: preview.plan.id,
    pricedAt: preview.pricedAt,
    net: preview.terms?.net ?? null,
  });
  if (!preview.terms) return { planId: preview.plan.slug, planName: preview.plan.name, trial: true, quote };
  const { terms } = preview;
  return {
    planId: preview.plan.slug,
    planName: preview.plan.name,
    trial: false,
    quote,
    resets: terms.resetsPeriod,
    charge: money(terms.charge),
    credit: money(terms.credit),
    owed: isPositive(terms.net),
    net: money(isPositive(terms.net) ? terms.net : negate(terms.net)),
    periodEnd: page.format.date(terms.periodEnd),
  };
}

/** The notice of a finished action, worded from the state it left. */
function doneNotice(page: PageRequest, done: string | null | undefined, overview: PortalOverview, view: ReturnType<typeof subscriptionView>): string | null {
  if (!done) return null;
  const { t } = page;
  if (done === 'quantity-pending' && view?.change?.quantity) return t('portal.done.quantity_pending', { n: view.change.quantity, amount: view.change.amount });
  if ((done === 'change-plan' || done === 'change-pending') && view?.change) return t('portal.done.change_pending', { plan: view.change.planName, amount: view.change.amount });
  const notices: Record<string, string> = {
    'change-plan': t('portal.done.change_plan'),
    'withdraw': t('portal.done.withdraw', { plan: overview.subscription?.plan.name ?? '' }),
    cancel: t('portal.done.cancel'),
    'undo-cancel': t('portal.done.undo_cancel'),
    'cancel-now': t('portal.done.cancel_now'),
    pause: t('portal.done.pause'),
    resume: t('portal.done.resume'),
    pay: t('portal.done.pay'),
    quantity: t('portal.done.quantity'),
    'quantity-scheduled': t('portal.done.quantity_scheduled'),
  };
  return notices[done] ?? null;
}

async function renderPortal(page: PageRequest, opts: RenderOptions = {}): Promise<void> {
  const { t, format } = page;
  let { error = null, status = 200 } = opts;
  const overview = await portalOverview(page.services, page.session.user);
  // Ledger entries in the page's language, by the documents' one catalogue of line words.
  const pageWords = lineWordsFor({ locale: page.lang === 'en' ? 'en-US' : 'id-ID', timeZone: page.deps.config.documents.timeZone });
  const sub = subscriptionView(page, overview);
  const pending = overview.pendingPayment;
  let preview = null;
  const change = opts.previewPlan ?? (typeof page.ctx.query.change === 'string' ? page.ctx.query.change : null);
  if (change && sub?.canChange) {
    try {
      preview = await previewView(page, overview, change);
    } catch (err) {
      error = failureMessage(t, err);
      status = status === 200 ? 400 : status;
    }
  }
  let quantityPreview = null;
  const units = opts.previewQuantity ?? (typeof page.ctx.query.quantity === 'string' ? page.ctx.query.quantity : null);
  if (units !== null && sub?.canChangeQuantity) {
    try {
      quantityPreview = await quantityPreviewView(page, overview, units);
    } catch (err) {
      const fields = err instanceof ValidationError ? formFieldErrors(t, err.errors, { quantity: 'quantity' }) : null;
      if (fields?.quantity) opts = { ...opts, fieldErrors: { ...opts.fieldErrors, quantity: fields.quantity }, values: { ...opts.values, quantity: units } };
      else error = failureMessage(t, err);
      status = status === 200 ? 400 : status;
    }
  }
  const action = (name: PortalAction) => withLang(page, `${page.path}${name}`);
  const pendingIsChange = sub?.change?.paymentShown ?? false;
  const otherPlans = overview.otherPlans.map((p) => {
    const price = billedPrice(page, p);
    return { slug: p.slug, taxed: price.taxed, label: price.taxed ? t('portal.plan_option_tax', { plan: p.name, amount: price.total }) : `${p.name} · ${price.total}` };
  });
  page.send(
    'portal',
    {
      title: t('portal.title'),
      scripts: ['/hosted-assets/checkout.js'],
      notice: doneNotice(page, opts.done, overview, sub),
      error,
      fieldErrors: opts.fieldErrors ?? {},
      values: opts.values ?? {},
      sub,
      confirmCancel: opts.confirmCancel && overview.subscription && sub?.live ? confirmCancelView(page, overview.subscription, opts.confirmCancel) : null,
      preview,
      quantityPreview,
      csrf: page.csrf,
      pagePath: page.path,
      keepHref: withLang(page, page.path),
      langParam: page.ctx.query.lang === 'en' || page.ctx.query.lang === 'id' ? page.lang : null,
      actions: {
        changePlan: action('change-plan'), withdrawChange: action('withdraw-change'), changeQuantity: action('change-quantity'), cancel: action('cancel'), undoCancel: action('undo-cancel'), pause: action('pause'),
        resume: action('resume'), pay: action('pay'), topup: action('topup'),
      },
      pending: pending && {
        title: pendingIsChange
          ? sub!.change!.quantity ? t('portal.pay_quantity_title', { n: sub!.change!.quantity }) : t('portal.pay_change_title', { plan: sub!.change!.planName })
          : t('pay.title'),
        due: format.money(pending.grossAmount, pending.currency),
        details: pending.paymentDetails,
        paymentType: pending.paymentType,
        expiresAtText: pending.expiresAt ? format.dateTime(pending.expiresAt) : null,
      },
      usage: usageView(page, overview),
      otherPlans,
      plansTaxNote: otherPlans.some((p) => p.taxed) ? t('portal.plans_tax_note') : null,
      invoices: portalInvoiceRows(page, overview.invoices),
      creditNotes: overview.creditNotes.map((note) => ({
        number: note.number,
        date: format.date(note.createdAt),
        amount: format.money(note.amount, note.currency),
        pdf: `${page.path}credit-notes/${note.id}/pdf`,
      })),
      wallet: {
        balance: format.money(overview.wallet.balance, overview.wallet.currency),
        ledger: overview.ledger.map((e) => ({ date: format.dateTime(e.createdAt), kind: t(`ledger.${e.kind}`), description: ledgerDescription(pageWords, e, overview.ledgerSubjects), amount: format.money(e.amount, overview.wallet.currency) })),
      },
      returnUrl: page.session.returnUrl,
    },
    status,
  );
}

export async function showPortal(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'portal', token);
  if (!page) return;
  await renderPortal(page, { done: typeof ctx.query.done === 'string' ? ctx.query.done : null });
}

/** The subscription a form acts on: its own `subscription_id` when it names one (held to the link's user by the use case), else the portal's. */
async function targetSubscription(page: PageRequest, form: Record<string, string>): Promise<string | null> {
  if (form.subscription_id) return form.subscription_id;
  return (await portalOverview(page.services, page.session.user)).subscription?.id ?? null;
}

/**
 * A top-up typed into the portal: read strictly in the page's language, then on to a checkout
 * for it. A refusal is said next to the field, with what was typed kept in it.
 */
async function topup(page: PageRequest, form: Record<string, string>): Promise<void> {
  const typed = form.amount ?? '';
  const refuse = (message: string) => renderPortal(page, { fieldErrors: { amount: message }, values: { amount: typed }, status: 400 });
  const parsed = parseTypedAmount(typed, page.lang);
  if (!parsed.ok) return refuse(typedAmountText(page.t, parsed.reason));
  const origin = hostedOrigin(page.deps.config, page.ctx);
  const back = `${origin}${withLang(page, page.path)}`;
  try {
    const link = await createCheckoutSession(page.services, page.session.user, { topupAmount: parsed.amount, successUrl: back, cancelUrl: back }, origin, { ownPage: true });
    page.ctx.status = 303;
    page.ctx.redirect(link.url);
  } catch (err) {
    const fields = err instanceof ValidationError ? formFieldErrors(page.t, err.errors, { topup_amount: 'amount' }) : null;
    if (fields?.amount) return refuse(fields.amount);
    return renderPortal(page, { error: failureMessage(page.t, err), values: { amount: typed }, status: 400 });
  }
}

/**
 * Confirms a previewed change at its quoted price. A quote that is missing, forged, for another
 * page or subscription, too old, or no longer the price (PlanChangeQuoteRefused) changes and
 * charges nothing: the page shows the change's preview as it stands now, with why.
 */
async function confirmChange(page: PageRequest, form: Record<string, string>, subscriptionId: string): Promise<string | null> {
  const quote = readQuote(page.deps.csrfKey, form.quote);
  const again = (key: 'portal.quote_moved' | 'portal.quote_expired' | 'portal.quote_invalid', plan: string) =>
    renderPortal(page, { error: page.t(key), previewPlan: plan, status: 409 }).then(() => null);
  if (!quote || quote.sessionId !== page.session.id || quote.subscriptionId !== subscriptionId) return again('portal.quote_invalid', form.plan_id ?? '');
  try {
    const changed = await changeSubscriptionPlan(page.services, page.session.user, subscriptionId, { planId: quote.planId, quote: { pricedAt: quote.pricedAt, net: quote.net } });
    return changed.subscription.pendingChange ? 'change-pending' : 'change-plan';
  } catch (err) {
    if (err instanceof PlanChangeQuoteRefused) return again(err.why === 'expired' ? 'portal.quote_expired' : 'portal.quote_moved', quote.planId);
    throw err;
  }
}

/**
 * Confirms a previewed change of units: more now at the amount shown, fewer at the period's end
 * (`when=period_end`) or now with the credit shown (`when=now`). When pricing now no longer
 * gives what was shown, nothing is changed or charged and the preview is shown again.
 */
async function confirmQuantity(page: PageRequest, form: Record<string, string>, subscriptionId: string): Promise<string | null> {
  const typed = form.quantity ?? '';
  const quantity = /^\s*\d{1,6}\s*$/.test(typed) ? Number(typed) : Number.NaN;
  const immediate = form.when === 'now';
  const shown = form.shown && /^\d+\.\d{2}$/.test(form.shown) ? form.shown : undefined;
  try {
    const changed = await changeSubscriptionQuantity(page.services, page.session.user, subscriptionId, { quantity, immediate, shown });
    if (changed.subscription.pendingChange?.quantity !== undefined) return 'quantity-pending';
    return changed.subscription.pendingQuantity !== null ? 'quantity-scheduled' : 'quantity';
  } catch (err) {
    if (err instanceof QuantityChangeMoved) return renderPortal(page, { error: page.t('portal.quantity_moved'), previewQuantity: typed, status: 409 }).then(() => null);
    const fields = err instanceof ValidationError ? formFieldErrors(page.t, err.errors, { quantity: 'quantity' }) : null;
    if (fields?.quantity) return renderPortal(page, { fieldErrors: { quantity: fields.quantity }, values: { quantity: typed }, status: 400 }).then(() => null);
    throw err;
  }
}

export async function portalAction(ctx: Context, deps: PageDeps, token: string, name: string): Promise<void> {
  const page = await openPage(ctx, deps, 'portal', token);
  if (!page) return;
  if (!(ACTIONS as readonly string[]).includes(name)) return renderPortal(page, { error: page.t('error.other'), status: 404 });
  const action = name as PortalAction;
  const form = await readForm(ctx);
  if (!formIsGenuine(page, form)) return renderPortal(page, { error: page.t('error.csrf_failed'), status: 403 });
  if (action === 'topup') return topup(page, form);
  const { services, session } = page;
  const user = session.user;
  let done: string = action;
  try {
    const subscriptionId = await targetSubscription(page, form);
    if (!subscriptionId) return renderPortal(page, { error: page.t('portal.none'), status: 409 });
    if (action === 'change-plan') {
      const outcome = await confirmChange(page, form, subscriptionId);
      if (outcome === null) return;
      done = outcome;
    }
    if (action === 'change-quantity') {
      const outcome = await confirmQuantity(page, form, subscriptionId);
      if (outcome === null) return;
      done = outcome;
    }
    if (action === 'withdraw-change') {
      await withdrawPlanChange(services, user, subscriptionId);
      done = 'withdraw';
    }
    if (action === 'cancel' || action === 'undo-cancel') {
      const outcome = await cancelFromPortal(page, action, form, subscriptionId);
      if ('confirm' in outcome) return renderPortal(page, { confirmCancel: outcome.confirm });
      done = outcome.done;
    }
    if (action === 'pause') await pauseSubscription(services, user, subscriptionId);
    if (action === 'resume') await resumeSubscription(services, user, subscriptionId);
    if (action === 'pay') await chargeSubscription(services, user, { subscriptionId });
  } catch (err) {
    return renderPortal(page, { error: failureMessage(page.t, err), status: 400 });
  }
  ctx.status = 303;
  ctx.redirect(withLang(page, page.path, { done }));
}

/** A document of the link's user, as the API serves it; another user's id answers the 404 of a missing one. */
export async function portalDocument(ctx: Context, deps: PageDeps, token: string, kind: 'invoices' | 'credit-notes', id: string): Promise<void> {
  const page = await openPage(ctx, deps, 'portal', token);
  if (!page) return;
  let file: PdfFile;
  try {
    file = kind === 'invoices'
      ? await invoicePdf(page.services, page.session.user, id, deps.renderPdf)
      : await creditNotePdf(page.services, page.session.user, id, deps.renderPdf);
  } catch (err) {
    return renderPortal(page, { error: failureMessage(page.t, err), status: 404 });
  }
  ctx.type = 'application/pdf';
  ctx.set({ 'Content-Disposition': `inline; filename="${file.filename}"`, 'Cache-Control': 'private, no-store', 'X-Content-Type-Options': 'nosniff' });
  ctx.body = file.pdf;
}
