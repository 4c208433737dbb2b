import { Invoice } from '../../db/entities/invoice.js';
import { Payment } from '../../db/entities/payment.js';
import type { Subscription } from '../../db/entities/subscription.js';
import { compare, isPositive } from '../../domain/money.js';
import type { Bank } from '../../gateway/types.js';
import { GatewayError } from '../../gateway/errors.js';
import type { DataContext, ServiceContext } from '../context.js';
import { openPayment } from '../gateway-events/open-payment.js';
import { submitPayment, type SubmitPaymentOptions } from '../gateway-events/submit-payment.js';
import { getOrCreateWallet } from '../wallet/wallet-ledger.js';
import { isUsageInvoice } from '../subscription-rules/usage-invoice.js';

/*
 * NOTE: a usage invoice (subscription-rules/usage-invoice.ts) is collected once, as a renewal's
 * first attempt, and its payment is made without a subscription (the invoice keeps it): its
 * settlement then pays that invoice and nothing else (settlement-purchase.ts: a payment without
 * a subscription buys its invoice), never a plan change nor a period, even after the
 * subscription ended; its failure leaves the subscription as it is and the invoice open; and
 * ending the subscription does not withdraw it. No dunning follows: an invoice not collected
 * stays open for the customer to pay.
 */

/** A usage payment to send to the gateway after the commit. */
export interface UsageSubmit {
  paymentId: string;
  options: SubmitPaymentOptions;
}

export interface UsageCollection {
  /** The usage invoices collected (issued now). */
  invoices: Invoice[];
  submits: UsageSubmit[];
  /** Why one could not be collected now (a short wallet, no saved card): it stays open. */
  outcome: string | null;
  /** How many were paid at once (a wallet). */
  paid: number;
}

/**
 * Collects, inside the caller's transaction, the usage invoices of `sub` issued since `since`
 * (by ending it or changing its plan) and not attempted yet: a wallet that covers one is debited now; a card (saved
 * token) or an asynchronous type gets a payment the caller sends after its commit (submitUsagePayments).
 */
export async function collectUsageInvoices(ctx: DataContext, sub: Subscription, since: Date): Promise<UsageCollection> {
  const issued = await ctx.em.find(Invoice, { subscription: sub, status: 'open', billingReason: 'subscription_update', createdAt: { $gte: since } }, { populate: ['lines'] });
  const attempted = new Set((await ctx.em.find(Payment, { invoice: { $in: issued } }, { fields: ['invoice'] })).map((p) => p.invoice!.id));
  const usage = issued.filter((i) => !attempted.has(i.id) && isUsageInvoice(i));
  const done: UsageCollection = { invoices: usage, submits: [], outcome: null, paid: 0 };
  for (const invoice of usage) {
    const input = {
      user: sub.user,
      // See the NOTE above: openPayment leaves the subscription off a usage invoice's payment.
      subscription: sub,
      invoice,
      paymentType: sub.paymentType,
      amount: invoice.totalAmount,
      currency: invoice.currency,
    };
    if (!isPositive(invoice.totalAmount)) {
      // Usage that costs nothing (a free tier, a package not started): paid at once, nothing to send.
      await openPayment(ctx, input);
      done.paid += 1;
    } else if (sub.paymentType === 'wallet') {
      const wallet = await getOrCreateWallet(ctx, sub.user);
      if (wallet.currency !== invoice.currency || compare(wallet.balance, invoice.totalAmount) < 0) {
        done.outcome = `the wallet does not cover the usage invoice ${invoice.number} (${invoice.totalAmount} ${invoice.currency}): it stays open`;
        continue;
      }
      await openPayment(ctx, input);
      done.paid += 1;
    } else if (sub.paymentType === 'credit_card' && !sub.cardToken) {
      done.outcome = `no saved card to charge the usage invoice ${invoice.number}: it stays open`;
    } else {
      const payment = await openPayment(ctx, input);
      done.submits.push({
        paymentId: payment.id,
        options: { bank: (sub.bank as Bank | null) ?? undefined, cardToken: sub.cardToken, merchantInitiated: sub.paymentType === 'credit_card', customer: sub.customerDetails },
      });
    }
  }
  return done;
}

/**
 * Sends the usage payments after the commit. A refusal or an outage leaves the invoice open
 * (the subscription's own change or cancellation already happened): never the caller's failure.
 */
export async function submitUsagePayments(ctx: ServiceContext, submits: UsageSubmit[]): Promise<void> {
  for (const { paymentId, options } of submits) {
    try {
      await submitPayment(ctx, paymentId, options);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
    }
  }
}
