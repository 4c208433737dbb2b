import type { Context } from 'koa';
import type { PaymentType } from '../../db/entities/subscription.js';
import { taxInvoice } from '../../domain/tax.js';
import { BANKS, GATEWAY_PAYMENT_TYPES, type GatewayPaymentType } from '../../gateway/types.js';
import { checkoutChoose, checkoutProgress, type CheckoutProgress } from '../../services/hosted/checkout.js';
import { failureMessage, formIsGenuine, openPage, readForm, withLang, type PageDeps, type PageRequest } from './page-kit.js';

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
  /** What the pay button says. */
  submitLabel: string;
}

function itemSummary(page: PageRequest): ItemSummary {
  const { t, format, session } = page;
  const config = page.deps.config;
  const plan = session.plan;
  if (!plan) {
    const amount = format.money(session.topupAmount!, config.walletCurrency);
    return {
      heading: t('checkout.topup'), name: t('checkout.topup_amount'), every: null, trial: null,
      rows: [{ label: t('checkout.total'), value: amount, total: true }], submitLabel: t('checkout.pay', { amount }),
    };
  }
  const tax = taxInvoice(plan.price, plan.taxBehavior, plan.currency, config.tax.pkp);
  const rate = tax.taxRate.replace(/\.?0+$/, '');
  const rows: ItemSummary['rows'] = [];
  if (tax.taxBehavior === 'exclusive') {
    rows.push({ label: t('checkout.subtotal'), value: format.money(tax.taxBase, plan.currency) });
    rows.push({ label: t('checkout.tax', { rate }), value: format.money(tax.taxAmount, plan.currency) });
  } else if (tax.taxBehavior === 'inclusive') {
    rows.push({ label: t('checkout.tax_included', { rate }), value: format.money(tax.taxAmount, plan.currency) });
  }
  const total = format.money(tax.total, plan.currency);
  rows.push({ label: t('checkout.total'), value: total, total: true });
  const every = plan.interval === 1 ? t(`checkout.every1.${plan.intervalUnit}`) : t(`checkout.every.${plan.intervalUnit}`, { n: plan.interval });
  return {
    heading: t('checkout.plan'), name: plan.name, every, rows,
    trial: plan.trialPeriodDays > 0 ? t('checkout.trial', { n: plan.trialPeriodDays }) : null,
    submitLabel: t('checkout.pay', { amount: total }),
  };
}

/** The gateway's card script: Midtrans's own in production, the simulator's under development. */
function cardScript(deps: PageDeps): { src: string; clientKey: string; environment: string } | null {
  const { gateway, hosted } = deps.config;
  if (gateway.baseUrl === null) {
    return deps.simulator ? { src: '/_simulator/v2/assets/js/midtrans-new-3ds.min.js', clientKey: hosted.clientKey ?? 'simulator', environment: 'sandbox' } : null;
  }
  if (!hosted.clientKey) return null;
  const environment = /sandbox/.test(gateway.baseUrl) ? 'sandbox' : 'production';
  return { src: `${new URL(gateway.baseUrl).origin}/v2/assets/js/midtrans-new-3ds.min.js`, clientKey: hosted.clientKey, environment };
}

function renderCheckout(page: PageRequest, progress: CheckoutProgress, error: string | null, status = 200): void {
  const { t, session, format } = page;
  const item = itemSummary(page);
  const card = cardScript(page.deps);
  const methods = offeredTypes(page, card !== null).map((value, i, all) => ({ value, label: t(`method.${value}`), checked: all.length === 1 || i === 0 }));
  const chooses = progress.state === 'choose' || progress.state === 'failed';
  const scripts = ['/hosted-assets/checkout.js'];
  if (chooses && card && methods.some((m) => m.value === 'credit_card')) scripts.unshift(card.src);
  const trialStarts = !!session.plan && session.plan.trialPeriodDays > 0;
  page.send(
    'checkout',
    {
      title: t('checkout.title'),
      scripts,
      clientKey: card?.clientKey,
      gatewayEnvironment: card?.environment,
      item,
      error,
      state: progress.state,
      methods,
      banks: BANKS,
      csrf: page.csrf,
      formAction: withLang(page, page.path),
      statusUrl: withLang(page, `${page.path}status`),
      submitLabel: trialStarts ? `${item.submitLabel} · ${t('checkout.start_trial')}` : item.submitLabel,
      paymentType: progress.paymentType,
      details: progress.details,
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
  renderCheckout(page, await checkoutProgress(page.services, page.session), null);
}

/** Polled by the page: `{state, next}`, `next` being where a paid checkout goes. */
export async function checkoutStatus(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'checkout', token);
  if (!page) return;
  const progress = await checkoutProgress(page.services, page.session);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = { state: progress.state, next: progress.state === 'paid' || progress.state === 'trialing' ? page.session.successUrl : null };
}

/** The customer's choice: checked, then handed to the same use case as the API, then shown. */
export async function chooseCheckout(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'checkout', token);
  if (!page) return;
  const form = await readForm(ctx);
  const progress = await checkoutProgress(page.services, page.session);
  if (!formIsGenuine(page, form)) return renderCheckout(page, progress, page.t('error.csrf_failed'), 403);
  // A second submit (a double click, a back button) never makes a second charge.
  if (progress.state !== 'choose' && progress.state !== 'failed') {
    ctx.status = 303;
    return ctx.redirect(withLang(page, page.path));
  }
  const card = cardScript(deps);
  const paymentType = form.payment_type as PaymentType;
  if (!(offeredTypes(page, card !== null) as string[]).includes(paymentType)) {
    return renderCheckout(page, progress, page.t('error.validation_error', { detail: 'payment_type' }), 400);
  }
  try {
    await checkoutChoose(page.services, page.session, {
      paymentType: paymentType as GatewayPaymentType,
      bank: paymentType === 'bank_transfer' ? form.bank : undefined,
      token: paymentType === 'credit_card' ? form.token : undefined,
    });
  } catch (err) {
    const message = failureMessage(page.t, err);
    return renderCheckout(page, await checkoutProgress(page.services, page.session), message, 400);
  }
  ctx.status = 303;
  ctx.redirect(withLang(page, page.path));
}
