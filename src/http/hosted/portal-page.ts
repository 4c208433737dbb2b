import type { Context } from 'koa';
import type { Subscription } from '../../db/entities/subscription.js';
import { isPositive, negate } from '../../domain/money.js';
import { subscriptionActions } from '../../domain/states/subscription-actions.js';
import { subscriptionStates } from '../../domain/states/subscription-states.js';
import { creditNotePdf } from '../../services/documents/credit-note-pdf.js';
import { invoicePdf, type PdfFile } from '../../services/documents/invoice-pdf.js';
import { createCheckoutSession } from '../../services/hosted/hosted-sessions.js';
import { portalOverview, type PortalOverview } from '../../services/hosted/portal.js';
import { cancelSubscription } from '../../services/subscriptions/cancel-subscription.js';
import { chargeSubscription } from '../../services/subscriptions/charge-subscription.js';
import { changeSubscriptionPlan, previewPlanChange } from '../../services/subscriptions/change-subscription-plan.js';
import { pauseSubscription } from '../../services/subscriptions/pause-subscription.js';
import { resumeSubscription } from '../../services/subscriptions/resume-subscription.js';
import { hostedOrigin } from '../handlers/hosted.js';
import { failureMessage, formIsGenuine, openPage, readForm, withLang, type PageDeps, type PageRequest } from './page-kit.js';

/** What the portal's forms may ask; each runs the same use case as the API, as the link's user. */
const ACTIONS = ['change-plan', 'cancel', 'pause', 'resume', 'pay', 'topup'] as const;
type PortalAction = (typeof ACTIONS)[number];

function every(page: PageRequest, sub: Subscription): string {
  const plan = sub.plan;
  return plan.interval === 1 ? page.t(`checkout.every1.${plan.intervalUnit}`) : page.t(`checkout.every.${plan.intervalUnit}`, { n: plan.interval });
}

function subscriptionView(page: PageRequest, sub: Subscription | null) {
  if (!sub) return null;
  const { t, format } = page;
  const live = ['pending', 'trialing', 'active', 'paused', 'past_due'].includes(sub.status);
  const renews = live && !sub.cancelAtPeriodEnd && (sub.status === 'active' || sub.status === 'trialing');
  const periodEnd = sub.currentPeriodEnd ? format.date(sub.currentPeriodEnd) : null;
  return {
    id: sub.id,
    live,
    planName: sub.plan.name,
    price: format.money(sub.plan.price, sub.plan.currency),
    every: every(page, sub),
    statusText: t(`status.${sub.status}`),
    trialEnd: sub.status === 'trialing' && sub.trialEnd ? format.date(sub.trialEnd) : null,
    nextBilling: renews ? periodEnd : null,
    periodEnd,
    endsAt: live && sub.cancelAtPeriodEnd ? periodEnd : null,
    scheduledPlan: sub.pendingPlan?.name ?? null,
    canChange: subscriptionActions.can(sub, 'change_plan'),
    canCancelAtEnd: subscriptionActions.can(sub, 'cancel_at_period_end') && !sub.cancelAtPeriodEnd,
    canPause: subscriptionStates.can(sub, 'pause'),
    canResume: subscriptionStates.can(sub, 'resume'),
    canPay: false,
  };
}

async function previewView(page: PageRequest, overview: PortalOverview, planSlug: string) {
  const sub = overview.subscription!;
  const preview = await previewPlanChange(page.services, page.session.user, sub.id, planSlug);
  const currency = preview.plan.currency;
  const money = (amount: string) => page.format.money(amount, currency);
  if (!preview.terms) return { planId: preview.plan.slug, planName: preview.plan.name, trial: true };
  const { terms } = preview;
  return {
    planId: preview.plan.slug,
    planName: preview.plan.name,
    trial: false,
    resets: terms.resetsPeriod,
    charge: money(terms.charge),
    credit: money(terms.credit),
    owed: isPositive(terms.net),
    net: money(isPositive(terms.net) ? terms.net : negate(terms.net)),
    periodEnd: page.format.date(terms.periodEnd),
  };
}

async function renderPortal(page: PageRequest, notice: string | null, error: string | null, status = 200): Promise<void> {
  const { t, format } = page;
  const overview = await portalOverview(page.services, page.session.user);
  const sub = subscriptionView(page, overview.subscription);
  const pending = overview.pendingPayment;
  if (sub) sub.canPay = subscriptionActions.can(overview.subscription!, 'charge') && !pending && overview.invoices.some((i) => i.status === 'open' && i.subscription?.id === sub.id);
  let preview = null;
  const change = typeof page.ctx.query.change === 'string' ? page.ctx.query.change : null;
  if (change && sub?.canChange) {
    try {
      preview = await previewView(page, overview, change);
    } catch (err) {
      error = failureMessage(t, err);
      status = 400;
    }
  }
  const action = (name: PortalAction) => withLang(page, `${page.path}${name}`);
  page.send(
    'portal',
    {
      title: t('portal.title'),
      scripts: ['/hosted-assets/checkout.js'],
      notice,
      error,
      sub,
      preview,
      csrf: page.csrf,
      pagePath: page.path,
      langParam: page.ctx.query.lang === 'en' || page.ctx.query.lang === 'id' ? page.lang : null,
      actions: { changePlan: action('change-plan'), cancel: action('cancel'), pause: action('pause'), resume: action('resume'), pay: action('pay'), topup: action('topup') },
      pending: pending && {
        due: format.money(pending.grossAmount, pending.currency),
        details: pending.paymentDetails,
        paymentType: pending.paymentType,
        expiresAtText: pending.expiresAt ? format.dateTime(pending.expiresAt) : null,
      },
      otherPlans: overview.otherPlans.map((p) => ({ slug: p.slug, label: `${p.name} · ${format.money(p.price, p.currency)}` })),
      invoices: overview.invoices.map((inv) => ({
        number: inv.number,
        status: t(`invoice.${inv.status}`),
        date: format.date(new Date(`${inv.issueDate}T00:00:00Z`)),
        total: format.money(inv.totalAmount, inv.currency),
        pdf: `${page.path}invoices/${inv.id}/pdf`,
      })),
      creditNotes: overview.creditNotes.map((note) => ({
        number: note.number,
        date: format.date(note.createdAt),
        amount: format.money(note.amount, note.currency),
        pdf: `${page.path}credit-notes/${note.id}/pdf`,
      })),
      wallet: {
        balance: format.money(overview.wallet.balance, overview.wallet.currency),
        ledger: overview.ledger.map((e) => ({ date: format.dateTime(e.createdAt), kind: t(`ledger.${e.kind}`), description: e.description, amount: format.money(e.amount, overview.wallet.currency) })),
      },
      returnUrl: page.session.returnUrl,
    },
    status,
  );
}

export async function showPortal(ctx: Context, deps: PageDeps, token: string): Promise<void> {
  const page = await openPage(ctx, deps, 'portal', token);
  if (!page) return;
  const done = typeof ctx.query.done === 'string' ? ctx.query.done : null;
  const notices: Record<string, string> = {
    'change-plan': page.t('portal.done.change_plan'),
    cancel: page.t('portal.done.cancel'),
    'cancel-now': page.t('portal.done.cancel_now'),
    pause: page.t('portal.done.pause'),
    resume: page.t('portal.done.resume'),
    pay: page.t('portal.done.pay'),
  };
  await renderPortal(page, done ? (notices[done] ?? null) : null, null);
}

/** The subscription a form acts on: its own `subscription_id` when it names one (held to the link's user by the use case), else the portal's. */
async function targetSubscription(page: PageRequest, form: Record<string, string>): Promise<string | null> {
  if (form.subscription_id) return form.subscription_id;
  return (await portalOverview(page.services, page.session.user)).subscription?.id ?? null;
}

export async function portalAction(ctx: Context, deps: PageDeps, token: string, name: string): Promise<void> {
  const page = await openPage(ctx, deps, 'portal', token);
  if (!page) return;
  if (!(ACTIONS as readonly string[]).includes(name)) return renderPortal(page, null, page.t('error.other'), 404);
  const action = name as PortalAction;
  const form = await readForm(ctx);
  if (!formIsGenuine(page, form)) return renderPortal(page, null, page.t('error.csrf_failed'), 403);
  const { services, session } = page;
  const user = session.user;
  let done: string = action;
  try {
    if (action === 'topup') {
      const back = `${hostedOrigin(deps.config, ctx)}${withLang(page, page.path)}`;
      const link = await createCheckoutSession(services, user, { topupAmount: form.amount?.replace(/[.\s]/g, ''), successUrl: back, cancelUrl: back }, hostedOrigin(deps.config, ctx), { ownPage: true });
      ctx.status = 303;
      return ctx.redirect(link.url);
    }
    const subscriptionId = await targetSubscription(page, form);
    if (!subscriptionId) return renderPortal(page, null, page.t('portal.none'), 409);
    if (action === 'change-plan') await changeSubscriptionPlan(services, user, subscriptionId, { planId: form.plan_id ?? '' });
    if (action === 'cancel') {
      const now = form.when === 'now';
      await cancelSubscription(services, user, subscriptionId, { immediate: now, reason: 'Canceled by the customer in the portal' });
      done = now ? 'cancel-now' : 'cancel';
    }
    if (action === 'pause') await pauseSubscription(services, user, subscriptionId);
    if (action === 'resume') await resumeSubscription(services, user, subscriptionId);
    if (action === 'pay') await chargeSubscription(services, user, { subscriptionId });
  } catch (err) {
    return renderPortal(page, null, failureMessage(page.t, err), 400);
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
    return renderPortal(page, null, failureMessage(page.t, err), 404);
  }
  ctx.type = 'application/pdf';
  ctx.set({ 'Content-Disposition': `inline; filename="${file.filename}"`, 'Cache-Control': 'private, no-store', 'X-Content-Type-Options': 'nosniff' });
  ctx.body = file.pdf;
}
