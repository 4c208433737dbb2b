import type { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { isPositive } from '../../domain/money.js';
import { renewalDueAt } from '../../domain/paid-access.js';
import type { DataContext } from '../context.js';
import { changeInvoicePeriod, createInvoice, type InvoiceLineInput } from '../invoices/create-invoice.js';
import { eventStore } from '../usage/event-store.js';
import { usageLines, usageOpenFrom } from '../usage/usage-charges.js';

/*
 * Usage billed in arrears outside a renewal (docs/usage.md, 'Billing in arrears'): when a
 * subscription ends now or at its period's end, and when a plan change applies now, the usage
 * of the open window [usageOpenFrom, end) is billed on an invoice of its own (billing_reason
 * subscription_update, its period the window). It is collected once, like a renewal, by the
 * use case that issued it (subscriptions/collect-usage-invoices.ts). Renewals put the period's
 * usage on the renewal invoice itself (renewalInvoiceInput).
 */

/**
 * A window's lines are worth an invoice when something was used (or is owed): usage that costs
 * nothing (a free tier) is still invoiced, at 0 and paid at once, so every counted event stands on
 * an invoice line; a window where nothing was used issues nothing.
 */
export function billsSomething(lines: InvoiceLineInput[]): boolean {
  return lines.some((l) => isPositive(l.unitAmount) || (l.subject?.units !== undefined && l.subject.units !== '0'));
}

/** Lines that bill usage and nothing else (a usage invoice's, or a renewal's of a plan with no base price). */
export function billsUsageOnly(lines: readonly InvoiceLine[]): boolean {
  return lines.length > 0 && lines.every((l) => l.kind === 'usage');
}

/**
 * True for an invoice issueUsageInvoice made (its lines loaded). NOTE: its payments, however
 * made (collected when it was issued, or a charge the customer asks for), name no subscription:
 * their settlement pays this invoice and nothing else, and their failure leaves it open. A
 * payment naming the subscription would be taken for a plan change's (plan-change.ts,
 * isChangePayment): its failure voided the invoice, billing its usage nowhere, and its
 * settlement went to the wallet as a dropped change's.
 */
export function isUsageInvoice(invoice: Invoice): boolean {
  return invoice.billingReason === 'subscription_update' && billsUsageOnly(invoice.lines.getItems());
}

/** The usage window a renewal bills: the open window up to the end of the period that ends. */
export function renewalUsageWindow(sub: Pick<Subscription, 'usageBilledUntil' | 'currentPeriodStart' | 'currentPeriodEnd' | 'nextBillingDate'>): { from: Date; to: Date } {
  const to = sub.currentPeriodEnd ?? sub.nextBillingDate!;
  const from = usageOpenFrom(sub) ?? to;
  return { from: from.getTime() < to.getTime() ? from : to, to };
}

/** Closes the open usage window at `to`: what follows is billed in the next one (events before it are period_closed). */
export function closeUsageWindow(sub: Subscription, to: Date): void {
  if (!sub.usageBilledUntil || sub.usageBilledUntil.getTime() < to.getTime()) sub.usageBilledUntil = to;
}

/**
 * Bills `sub`'s usage of the open window up to `until` (or just past its latest event) under `plan` (the plan the window was used
 * under) on a usage-only invoice issued now, inside the caller's transaction, and closes the
 * window at `to`. `billAgain`: usage lines of invoices voided with this (usageToBillAgain),
 * billed on the same invoice as they were priced. Nothing to bill (no lines, or lines that all
 * come to 0 with nothing used) issues nothing (the window still closes). Returns the invoice,
 * open, for the caller to collect.
 */
export async function issueUsageInvoice(ctx: DataContext, sub: Subscription, plan: Plan, until: Date, billAgain: readonly InvoiceLineInput[] = []): Promise<Invoice | null> {
  const window = await openWindowUpTo(ctx, sub, until);
  const lines = [...billAgain];
  if (window) {
    lines.push(...(await usageLines(ctx, sub, plan, window.from, window.to)));
    closeUsageWindow(sub, window.to);
  }
  if (!billsSomething(lines)) return null;
  const starts = [...billAgain.map((l) => l.periodStart), window?.from].filter((d): d is Date => d instanceof Date).map((d) => d.getTime());
  const ends = [...billAgain.map((l) => l.periodEnd), window?.to].filter((d): d is Date => d instanceof Date).map((d) => d.getTime());
  const at = ctx.clock.now();
  // A paid plan change's invoice starts its period where its usage window closed: a usage invoice
  // of the window that opened there keeps the window on its lines only.
  const period =
    starts.length > 0 && ends.length > 0
      ? await changeInvoicePeriod(ctx, sub, new Date(Math.min(...starts)), new Date(Math.max(...ends)))
      : { periodStart: null, periodEnd: null };
  const invoice = await createInvoice(ctx, {
    user: sub.user,
    subscription: sub,
    currency: plan.currency,
    billingReason: 'subscription_update',
    taxBehavior: plan.taxBehavior,
    issuedAt: at,
    dueAt: renewalDueAt(at, ctx.config.renewalDueDays),
    ...period,
    discount: null,
    lines,
  });
  await ctx.em.flush();
  return invoice;
}

/**
 * The open usage window up to `until`, or null when it is empty. NOTE: a window closed early
 * takes every event accepted so far, also those stamped at the closing instant or up to 5
 * minutes ahead of it (events may be): they were reported while this plan held, and no later
 * window may bill them (a new plan may not charge their metric, an ended subscription has no
 * later window). Events stamped before the new end that arrive afterwards are refused as
 * period_closed.
 */
async function openWindowUpTo(ctx: DataContext, sub: Subscription, until: Date): Promise<{ from: Date; to: Date } | null> {
  const from = usageOpenFrom(sub);
  if (!from) return null;
  const last = await eventStore.lastCountedAt(ctx.em, sub.id, from);
  const to = last && last.getTime() >= until.getTime() ? new Date(last.getTime() + 1) : until;
  return from.getTime() < to.getTime() ? { from, to } : null;
}
