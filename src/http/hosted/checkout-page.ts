import type { Context } from 'koa';
import { BANKS, GATEWAY_PAYMENT_TYPES, type Bank, type GatewayPaymentType } from '../../gateway/types.js';
import {
  checkoutChoose,
  checkoutProgress,
  followCheckout,
  keepCheckoutTerms,
  trialOffer,
  type ChoiceResult,
  type CheckoutPricing,
  type CheckoutProgress,
  type CheckoutTerms,
  type TrialOffer,
} from '../../services/hosted/checkout.js';
import { PromotionCodeInvalidError } from '../../domain/errors.js';
import { isPositive } from '../../domain/money.js';
import { MAX_QUANTITY } from '../../services/subscriptions/create-subscription.js';
import { promotionCodeText } from './field-errors.js';
import { pricedAsSubmitted, pricedFields, pricedTerms, termsRefusal, typedTerms, type TypedTerms } from './checkout-terms.js';
import { firstPeriodAmount } from '../../services/subscriptions/authorize-trial-card.js';
import { classifyFailure } from '../../services/common/classify-failure.js';
import { failureMessage, formIsGenuine, openPage, readForm, withLang, type PageDeps, type PageRequest } from './page-kit.js';
import type { Translate } from './language.js';

/** The payment types this checkout offers: the one the client chose, else all; card only with a way to tokenize it. */
function offeredTypes(page: PageRequest, cardForm: boolean): GatewayPaymentType[] {
  const all = GATEWAY_PAYMENT_TYPES.filter((type) => type !== 'credit_card' || cardForm);
  const only = page.session.paymentType;
  return only ? all.filter((type) => type === only) : all;
}

interface ItemSummary {
  heading: string;
  name: string;
  every: string | null;
  trial: string | null;
  rows: { label: string; value: string; total?: boolean }[];
  /** A trial: what is paid today (nothing) and when the first charge comes, and how much. */
  trialTerms: string[];
  /** How PPN is reckoned, when the price carries it. */
  taxNote: string | null;
  /** What the pay button says. */
  submitLabel: string;
}

function itemSummary(page: PageRequest, offer: TrialOffer | null, priced: CheckoutPricing | null): ItemSummary {
  const { t, format, session } = page;
  const config = page.deps.config;
  const plan = session.plan;
  if (!plan || !priced) {
    const amount = format.money(session.topupAmount!, config.walletCurrency);
    return {
      heading: t('checkout.topup'), name: t('checkout.topup_amount'), every: null, trial: null, trialTerms: [], taxNote: null,
      rows: [{ label: t('checkout.total'), value: amount, total: true }], submitLabel: t('checkout.pay', { amount }),
    };
  }
  // PPN on the price after the discount, as the first invoice will have it (priceInvoice).
  const tax = priced.pricing.tax;
  const rate = tax.taxRate.replace(/\.?0+$/, '');
  const rows: ItemSummary['rows'] = [];
  const discounted = isPositive(priced.pricing.discountAmount);
  if (plan.perUnit) {
    rows.push({ label: t('checkout.units', { n: priced.quantity, price: format.money(plan.price, plan.currency) }), value: format.money(priced.pricing.subtotal, plan.currency) });
  }
  if (discounted) {
    rows.push({ label: t('checkout.discount', { code: priced.promotionCode ?? '' }), value: `\u2212${format.money(priced.pricing.discountAmount, plan.currency)}` });
  }
  if (tax.taxBehavior === 'exclusive') {
    rows.push({ label: t('checkout.subtotal'), value: format.money(tax.taxBase, plan.currency) });
    rows.push({ label: t('checkout.tax', { rate }), value: format.money(tax.taxAmount, plan.currency) });
  } else if (tax.taxBehavior === 'inclusive') {
    rows.push({ label: t('checkout.tax_included', { rate }), value: format.money(tax.taxAmount, plan.currency) });
  }
  // NOTE: PPN is 12 % of DPP nilai lain, 11/12 of the price before tax: 11 % of that price in effect.
  const taxNote = tax.taxBehavior === 'none' ? null : t('checkout.tax_note', { rate });
  const total = format.money(tax.total, plan.currency);
  const every = plan.interval === 1 ? t(`checkout.every1.${plan.intervalUnit}`) : t(`checkout.every.${plan.intervalUnit}`, { n: plan.interval });
  if (!offer) {
    rows.push({ label: t('checkout.total'), value: total, total: true });
    return { heading: t('checkout.plan'), name: plan.name, every, rows, trial: null, trialTerms: [], taxNote, submitLabel: t('checkout.pay', { amount: total }) };
  }
  // A trial: the plan's price is what each period costs from the trial's end; today costs nothing.
  // Units or a discount change that price: the first charge is the period's total as priced here.
  const firstCharge = plan.perUnit || discounted ? total : format.money(offer.firstCharge, offer.currency);
  const date = format.date(offer.endsAt);
  rows.push({ label: t('checkout.period_total'), value: total });
  rows.push({ label: t('checkout.today'), value: format.money('0', plan.currency), total: true });
  const trialTerms = [
    t('checkout.trial_today'),
    tax.taxBehavior === 'exclusive' || tax.taxBehavior === 'inclusive'
      ? t('checkout.trial_first_charge_tax', { amount: firstCharge, date, rate })
      : t('checkout.trial_first_charge', { amount: firstCharge, date }),
  ];
  return {
    heading: t('checkout.plan'), name: plan.name, every, rows, trialTerms, taxNote,
    trial: t('checkout.trial', { n: offer.days }),
    submitLabel: t('checkout.start_trial_today', { amount: format.money('0', plan.currency) }),
  };
}

/** The gateway's card script: Midtrans's own in production, the simulator's under development. */
export function cardScript(deps: PageDeps): { src: string; clientKey: string; environment: string } | null {
  const { gateway, hosted } = deps.config;
  if (gateway.baseUrl === null) {
    return deps.simulator ? { src: '/_simulator/v2/assets/js/midtrans-new-3ds.min.js', clientKey: hosted.clientKey ?? 'simulator', environment: 'sandbox' } : null;
  }
  if (!hosted.clientKey) return null;
  const environment = /sandbox/.test(gateway.baseUrl) ? 'sandbox' : 'production';
  return { src: `${new URL(gateway.baseUrl).origin}/v2/assets/js/midtrans-new-3ds.min.js`, clientKey: hosted.clientKey, environment };
}

interface RenderOptions {
  error?: string | null;
  status?: number;
  /** A trial card's 3-D Secure page, shown in the same frame a card charge uses. */
  threeDsUrl?: string | null;
  /** Shown next to the card form, the card method chosen. */
  cardError?: string | null;
  /** A line above the page's state (the earlier payment arrived before another method could replace it). */
  notice?: string | null;
  /** Refusals next to the quantity and promotion code fields, by field name. */
  fieldErrors?: Record<string, string>;
  /** What the customer typed in those fields, shown again as typed. */
  typed?: TypedTerms | null;
  /** Raw text of the fields, kept as typed after a refusal. */
  values?: { quantity?: string; promotion_code?: string };
  /** The method (and bank) the customer had chosen, kept chosen when the page is shown again. */
  chosen?: { paymentType: string; bank?: string };
}

/** The radio buttons of the offered methods: the one chosen before kept chosen, the card's after a card error. */
export function methodChoices(t: Translate, offered: GatewayPaymentType[], opts: { cardError: string | null; chosen?: { paymentType: string } }) {
  const kept = offered.find((type) => type === opts.chosen?.paymentType);
  const preferred = opts.cardError && offered.includes('credit_card') ? 'credit_card' : kept ?? offered[0];
  return offered.map((value, _i, all) => ({ value, label: t(`method.${value}`), checked: all.length === 1 || value === preferred }));
}

/** A form's method and bank, when they are offered ('payment_type' or 'bank' naming what is not). */
export function chosenMethod(form: Record<string, string>, offered: GatewayPaymentType[]): { paymentType: GatewayPaymentType; bank: Bank | undefined } | 'payment_type' | 'bank' {
  const paymentType = form.payment_type as GatewayPaymentType;
  if (!(offered as string[]).includes(paymentType)) return 'payment_type';
  const bank = paymentType === 'bank_transfer' ? (form.bank || 'bca') : undefined;
  if (bank !== undefined && !(BANKS as readonly string[]).includes(bank)) return 'bank';
  return { paymentType, bank: bank as Bank | undefined };
}

/** A charge waiting for the customer may be replaced by another method (its order canceled first). */
function switchesFor(progress: CheckoutProgress): boolean {
  return (progress.state === 'pending' || progress.state === 'confirming') && progress.orderId !== null;
}

async function renderCheckout(page: PageRequest, progress: CheckoutProgress, opts: RenderOptions = {}): Promise<void> {
  const { t, session, format } = page;
  const status = opts.status ?? 200;
  // The trial the customer would get by choosing now: none once the user has had this plan's.
  const offer = session.plan && (progress.state === 'choose' || progress.state === 'failed' || progress.state === 'card_check')
    ? await trialOffer(page.services, session.user, session.plan)
    : null;
  const priced = await pricedTerms(page, opts.typed ?? null);
  const item = itemSummary(page, offer, priced);
  // The form's units and code: as typed after a refusal, else those the checkout is priced with.
  const terms = session.plan && !switchesFor(progress)
    ? {
      perUnit: session.plan.perUnit,
      quantity: opts.values?.quantity ?? String(priced?.quantity ?? session.quantity),
      promotionCode: opts.values?.promotion_code ?? priced?.promotionCode ?? '',
      unitPrice: format.money(session.plan.price, session.plan.currency),
      applied: priced?.promotionCode && !opts.fieldErrors?.promotion_code ? t('checkout.promo_applied', { code: priced.promotionCode }) : null,
      max: MAX_QUANTITY,
      // What this form is priced for: a submit that asks for anything else is priced again first.
      priced: priced ? pricedFields(priced, offer) : null,
    }
    : null;
  const card = cardScript(page.deps);
  const cardError = opts.cardError ?? (progress.failure === 'card_declined' ? t('card.declined') : null);
  const methods = methodChoices(t, offeredTypes(page, card !== null), { cardError, chosen: opts.chosen });
  // Waiting for a trial card's 3-D Secure without its page (a reload): the card can be given again.
  const cardCheck = progress.state === 'card_check';
  const chooses = progress.state === 'choose' || progress.state === 'failed' || (cardCheck && !opts.threeDsUrl);
  // A charge waiting for the customer may be replaced by another method (its order canceled first).
  const switches = switchesFor(progress);
  const scripts = ['/hosted-assets/checkout.js'];
  if ((chooses || switches) && card && methods.some((m) => m.value === 'credit_card')) scripts.unshift(card.src);
  const trialStarted = progress.state === 'trialing' && progress.trialEnd && session.plan
    ? t(progress.cardSaved ? 'pay.trial_first_charge' : 'pay.trial_first_bill', {
      date: format.date(progress.trialEnd),
      amount: format.money(firstPeriodAmount(page.services, session.plan), session.plan.currency),
    })
    : null;
  page.send(
    'checkout',
    {
      title: t('checkout.title'),
      scripts,
      clientKey: card?.clientKey,
      gatewayEnvironment: card?.environment,
      item,
      error: opts.error ?? null,
      notice: opts.notice ?? null,
      terms,
      fieldErrors: opts.fieldErrors ?? {},
      cardError,
      state: progress.state,
      chooses,
      switches,
      replaces: switches ? progress.orderId : null,
      threeDsUrl: opts.threeDsUrl ?? null,
      trialStarted,
      methods,
      banks: BANKS,
      bank: opts.chosen?.bank ?? null,
      csrf: page.csrf,
      formAction: withLang(page, page.path),
      statusUrl: withLang(page, `${page.path}status`),
      submitLabel: item.submitLabel,
      paymentType: progress.paymentType,
      details: cardCheck && opts.threeDsUrl ? { redirect_url: opts.threeDsUrl } : progress.details,
      due: progress.amount && progress.currency ? format.money(progress.amount, progress.currency) : null,
      expiresAt: progress.expiresAt?.toISOString() ?? null,
      expiresAtText: progress.expiresAt ? format.dateTime(progress.expiresAt) : null,
      successUrl: session.successUrl,
      cancelUrl: session.cancelUrl,
    },
    status,
  );
}

export async function showCheckout(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'checkout', token);
  if (!page) return;
  await renderCheckout(page, await checkoutProgress(page.services, page.session));
}

/** Polled by the page: `{state, next, order_id}`, `next` being where a paid checkout goes. */
export async function checkoutStatus(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'checkout', token);
  if (!page) return;
  const progress = await followCheckout(page.services, page.session);
  ctx.set('Cache-Control', 'no-store');
  // order_id: the waiting order, so that a page left open elsewhere sees another method chosen.
  ctx.body = { state: progress.state, next: progress.state === 'paid' || progress.state === 'trialing' ? page.session.successUrl : null, order_id: progress.orderId };
}

/** The customer's choice: checked, then handed to the same use case as the API, then shown. */
export async function chooseCheckout(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'checkout', token);
  if (!page) return;
  const form = await readForm(ctx);
  const current = () => checkoutProgress(page.services, page.session);
  if (!formIsGenuine(page, form)) return renderCheckout(page, await current(), { error: page.t('error.csrf_failed'), status: 403 });
  if (form.apply !== undefined) return applyTerms(page, form, await current());
  const method = chosenMethod(form, offeredTypes(page, cardScript(deps) !== null));
  if (typeof method === 'string') return renderCheckout(page, await current(), { error: page.t('error.validation_error', { detail: method }), status: 400 });
  const { paymentType, bank } = method;
  // Units and a promotion code: checked before anything is claimed or charged; refused next to their fields.
  const typed = typedTerms(page, form);
  const values = { quantity: form.quantity, promotion_code: form.promotion_code };
  let terms: CheckoutTerms | undefined;
  // Only while the checkout can still be chosen: once a submit charged (or is charging), the
  // code it counted may be used up, and this submit is sent back to the page (already_chosen).
  const before = await current();
  const open = before.state === 'choose' || before.state === 'failed' || before.state === 'card_check';
  const chosen = { paymentType, bank };
  if (typed && !form.replaces && open) {
    const checked = await termsRefusal(page, typed);
    if (checked.errors) return renderCheckout(page, before, { fieldErrors: checked.errors, typed, values, status: 422, chosen });
    terms = { quantity: checked.priced.quantity, promotionCode: checked.priced.promotionCode };
    // Typed and never priced (Apply not pressed), or priced at another amount: shown, not charged.
    const offer = await trialOffer(page.services, page.session.user, page.session.plan!);
    if (!pricedAsSubmitted(page, form, checked.priced, offer)) {
      await keepCheckoutTerms(page.services, page.session, terms);
      const total = page.format.money(checked.priced.pricing.tax.total, page.session.plan!.currency);
      return renderCheckout(page, before, { notice: page.t('checkout.repriced', { amount: total }), status: 409, chosen });
    }
  }
  let result: ChoiceResult;
  try {
    result = await checkoutChoose(page.services, page.session, {
      terms,
      paymentType,
      bank,
      token: paymentType === 'credit_card' ? form.token : undefined,
      replaces: form.replaces || undefined,
    });
  } catch (err) {
    const after = await current();
    // The gateway's answer to the charge was lost: the page follows that charge (it may have
    // been taken) and offers no second one until the gateway has said what became of it.
    if (after.state === 'confirming') return seeThePage(page);
    // The code was used up between the check and the charge (another customer took its last use).
    if (err instanceof PromotionCodeInvalidError) {
      return renderCheckout(page, after, { fieldErrors: { promotion_code: promotionCodeText(page.t, err.reason) }, typed, values, status: 422 });
    }
    const failure = classifyFailure(err);
    // The bank refused the card (422 card_declined): said next to the card form, another card may be tried.
    if (failure?.code === 'card_declined') {
      return renderCheckout(page, after, { cardError: page.t('card.declined_reason', { reason: declineReason(failure.message) }), status: 422 });
    }
    return renderCheckout(page, after, { error: failureMessage(page.t, err), status: 400 });
  }
  switch (result.outcome) {
    case 'already_chosen':
      // A second submit (a double click, a back button, another tab) never makes a second charge.
      return seeThePage(page);
    case 'earlier_paid':
      return renderCheckout(page, await current(), { notice: page.t('pay.switch_earlier_paid') });
    case 'earlier_not_canceled':
      return renderCheckout(page, await current(), { error: page.t('pay.switch_not_canceled'), status: 409 });
    case 'charged':
      // The gateway's 3-D Secure page is known from its charge answer only: shown in this response
      // rather than after a redirect. A reload later shows the waiting state and the card form.
      if (result.threeDsUrl) return renderCheckout(page, await current(), { threeDsUrl: result.threeDsUrl });
      return seeThePage(page);
  }
}

/**
 * The form's Apply button: the units and promotion code are checked and priced, and kept on the
 * checkout while nothing is charged yet, so the page shows the new total (the discount line and
 * PPN on the discounted price). Nothing is charged; a code is counted only when the checkout is paid.
 */
async function applyTerms(page: PageRequest, form: Record<string, string>, progress: CheckoutProgress): Promise<void> {
  const typed = typedTerms(page, form);
  const values = { quantity: form.quantity, promotion_code: form.promotion_code };
  const open = progress.state === 'choose' || progress.state === 'failed' || progress.state === 'card_check';
  if (!typed || !open) return seeThePage(page);
  const checked = await termsRefusal(page, typed);
  if (checked.errors) return renderCheckout(page, progress, { fieldErrors: checked.errors, typed, values, status: 422 });
  await keepCheckoutTerms(page.services, page.session, { quantity: checked.priced.quantity, promotionCode: checked.priced.promotionCode });
  return renderCheckout(page, progress);
}

/** 303 to the page itself, which shows where the checkout stands. */
function seeThePage(page: PageRequest): void {
  page.ctx.status = 303;
  page.ctx.redirect(withLang(page, page.path));
}

/** The bank's words in a card_declined message ("The card was declined: REASON."), else all of it. */
export function declineReason(message: string): string {
  const m = /declined:\s*(.+?)\.?$/s.exec(message);
  return m ? m[1]! : message;
}
