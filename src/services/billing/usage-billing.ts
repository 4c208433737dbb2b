import type { Invoice } from '../../db/entities/invoice.js';
import type { Plan } from '../../db/entities/plan.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { compare, isPositive } from '../../domain/money.js';
import { GatewayError } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { submitPayment } from '../gateway-events/submit-payment.js';
import { createInvoice, type InvoiceLineInput } from '../invoices/create-invoice.js';
import { usageLines, usageOpenFrom } from '../usage/usage-charges.js';
import { getOrCreateWallet } from '../wallet/wallet-ledger.js';
import { renewalSubmitOptions, type AfterCommit } from './collect-renewal.js';
import { dunningSchedule } from './dunning-schedule.js';

/*
 * Usage billed in arrears outside a renewal (docs/usage.md, 'Billing in arrears'): when a
 * subscription ends now or at its period's end, and when a plan change applies now, the usage
 * of the open window [usageOpenFrom, end) is billed on an invoice of its own (billing_reason
 * subscription_update, its period the window), collected once like a renewal. Renewals put
 * the period's usage on the renewal invoice itself (renewalInvoiceInput).
 *
 * NOTE: the usage invoice's payment is made without a subscription (the invoice keeps it):
 * its settlement then pays that invoice and nothing else (settlement-purchase.ts: a payment
 * without a subscription buys its invoice), never a plan change nor a period, even after the
 * subscription ended; its failure leaves the subscription as it is and the invoice open; and
 * ending the subscription does not withdraw it.
 */

/** A window's lines are worth an invoice when at least one of them asks for money. */
export function billsSomething(lines: InvoiceLineInput[]): boolean {
  return lines.some((l) => isPositive(l.unitAmount));
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

export interface UsageBilled {
  invoice: Invoice | null;
  /** The usage payment to send to the gateway after the commit (a card or another asynchronous type). */
  submit: AfterCommit['submit'];
  /** Why it could not be collected now (a short wallet, no saved card): the invoice stays open. */
  outcome: string | null;
  paid: boolean;
}

const NOTHING_BILLED: UsageBilled = { invoice: null, submit: null, outcome: null, paid: false };

/**
 * Bills `sub`'s usage of the open window up to `to` under `plan` (the plan the window was used
 * under) as a usage-only invoice issued now, inside the caller's transaction, and closes the
 * window at `to`. A window with no charges, or whose charges all come to 0, issues nothing
 * (the window still closes). `send`: open a gateway payment for the caller to submit after its
 * commit; without it only a wallet is debited now and any other invoice waits open.
 */
export async function billUsageSoFar(ctx: DataContext, sub: Subscription, plan: Plan, to: Date, send = true): Promise<UsageBilled> {
  const from = usageOpenFrom(sub);
  if (!from || from.getTime() >= to.getTime()) return NOTHING_BILLED;
  const lines = await usageLines(ctx, sub, plan, from, to);
  closeUsageWindow(sub, to);
  if (!billsSomething(lines)) return NOTHING_BILLED;
  const at = ctx.clock.now();
  const { dueAt } = dunningSchedule(at, ctx.config);
  const invoice = await createInvoice(ctx, {
    user: sub.user,
    subscription: sub,
    currency: plan.currency,
    billingReason: 'subscription_update',
    taxBehavior: plan.taxBehavior,
    issuedAt: at,
    dueAt,
    periodStart: from,
    periodEnd: to,
    discount: null,
    lines,
  });
  await ctx.em.flush();
  return { invoice, ...(await collectUsageInvoice(ctx, sub, invoice, dueAt, send)) };
}

/**
 * One attempt to collect a usage invoice, as a renewal's first attempt: a wallet that covers it
 * is debited now; a card (saved token) or an asynchronous type gets a payment sent after the
 * commit. No dunning follows: an invoice not collected stays open for the customer to pay.
 */
async function collectUsageInvoice(ctx: DataContext, sub: Subscription, invoice: Invoice, payableUntil: Date, send: boolean): Promise<Omit<UsageBilled, 'invoice'>> {
  const input = {
    user: sub.user,
    // See the NOTE at the top: the invoice names the subscription, its payment does not.
    subscription: null as unknown as Subscription,
    invoice,
    paymentType: sub.paymentType,
    amount: invoice.totalAmount,
    currency: invoice.currency,
  };
  if (sub.paymentType === 'wallet') {
    const wallet = await getOrCreateWallet(ctx, sub.user);
    if (wallet.currency !== invoice.currency || compare(wallet.balance, invoice.totalAmount) < 0) {
      return { submit: null, outcome: `the wallet does not cover the usage invoice ${invoice.number} (${invoice.totalAmount} ${invoice.currency}): it stays open`, paid: false };
    }
    await openPayment(ctx, input);
    return { submit: null, outcome: null, paid: true };
  }
  if (sub.paymentType === 'credit_card' && !sub.cardToken) {
    return { submit: null, outcome: `no saved card to charge the usage invoice ${invoice.number}: it stays open`, paid: false };
  }
  if (!send) return { submit: null, outcome: null, paid: false };
  const payment = await openPayment(ctx, input);
  return { submit: { paymentId: payment.id, invoiceId: invoice.id, options: renewalSubmitOptions(sub, ctx.clock.now(), payableUntil) }, outcome: null, paid: false };
}

/**
 * Sends a usage invoice's payment after the commit. A refusal or an outage leaves the invoice
 * open (the subscription's own change or cancellation already happened): never the caller's failure.
 */
export async function submitUsagePayment(ctx: ServiceContext, submit: AfterCommit['submit']): Promise<void> {
  if (!submit) return;
  try {
    await submitPayment(ctx, submit.paymentId, submit.options);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
  }
}
