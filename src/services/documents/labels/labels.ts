import type { DocumentSettings } from '../../../config.js';
import type { CreditNoteReason } from '../../../db/entities/credit-note.js';
import type { InvoiceStatus } from '../../../db/entities/invoice.js';
import type { PaymentType } from '../../../db/entities/subscription.js';

/*
 * Every word a customer reads on an invoice, a credit note, a receipt email or an in-app
 * notification, one catalogue per language (id-ID.ts, en-US.ts), keys named by document and
 * field (docs/documents.md; Lago's config/locales). Both catalogues have this one shape, so a label
 * missing from either is a type error. A phrase that carries a value is a function of the
 * value, already formatted (amounts and dates come from format.ts).
 */

/** How a document is written: BILLING_LOCALE and BILLING_TIMEZONE. */
export type LocaleSettings = Pick<DocumentSettings, 'locale' | 'timeZone'>;

/** What a settlement that could not be used was refused for (src/services/payments/credit-unusable-settlement.ts). */
export type UnusableSettlementWord = 'invoice_already_paid' | 'invoice_void' | 'subscription_ended' | 'plan_change_dropped' | 'topup_canceled' | 'period_passed';

export interface Labels {
  /** The parts every document shares. */
  document: {
    /** Heading of the seller's block on an untaxed document. */
    from: string;
    /** Headings of the parties on a taxed document. */
    seller: string;
    buyer: string;
    taxId: string;
    nitku: string;
    nik: string;
    /** A foreign buyer's passport and another buyer's identity document, with the country when known. */
    passport: string;
    otherId: string;
    columns: { description: string; quantity: string; unitPrice: string; amount: string };
    /** The page number at the foot; `{page}` and `{pages}` are filled in when the page is drawn. */
    page: string;
    amountsIn: (currency: string) => string;
  };
  invoice: {
    title: string;
    billTo: string;
    facts: { number: string; issueDate: string; dueDate: string; paidOn: string; period: string; taxInvoiceNumber: string };
    /** The second line of a proration or credit line, with the period it covers when known. */
    lineDetail: { proration: (span: string | null) => string; credit: (span: string | null) => string; discount: (amount: string) => string };
    stamps: Record<InvoiceStatus, string> & { refunded: string; partiallyRefunded: string };
    statuses: Record<InvoiceStatus, string>;
    refundedInFull: string;
    refundedInPart: (amount: string) => string;
    chargedBack: (amount: string) => string;
    totals: {
      subtotal: string;
      /** The invoice's discount, between the subtotal and the DPP; shown only when there is one. */
      discount: string;
      taxBase: string;
      otherTaxBase: string;
      tax: (rate: string) => string;
      rounding: string;
      total: string;
      amountPaid: string;
      refunded: string;
      creditedToWallet: string;
      chargedBack: string;
      netPaid: string;
      amountDue: string;
    };
    payment: { heading: string; status: string; method: string; paidAt: string; order: string; transaction: string; payBy: string };
    howToPay: {
      heading: string;
      bank: string;
      vaNumber: string;
      billerCode: string;
      billKey: string;
      qrCode: string;
      appLink: string;
      cardPage: string;
      amount: string;
      order: string;
      expires: string;
      transfer: (amount: string, bank: string) => string;
      billPayment: (amount: string) => string;
      /** `app`: the wallet whose QR code it is (GoPay); empty for QRIS, which any e-wallet or bank app pays. */
      scanQr: (amount: string, app: string) => string;
      openApp: (amount: string, method: string) => string;
      verifyCard: (amount: string) => string;
    };
    adjustments: { heading: string; date: string; document: string; details: string; amount: string; creditNote: (number: string) => string; refund: string };
  };
  creditNote: {
    title: string;
    creditedTo: string;
    facts: { issueDate: string; invoice: string; invoiceDate: string; taxInvoiceNumber: string };
    stamps: { refunded: string; credited: string };
    totals: { invoiceTotal: string; taxIncluded: string; totalCredited: string };
    details: { heading: string; reason: string; credited: string; note: string; originalPayment: string; refundReference: string };
  };
  creditReasons: Record<CreditNoteReason, string>;
  /** Where a credit note's money went, after its reason ("Refund back to GoPay"). */
  destinations: { backTo: (method: string) => string; toWallet: string };
  paymentMethods: Record<PaymentType, string>;
  unusableReasons: Record<UnusableSettlementWord, string>;
  email: EmailLabels;
  inApp: InAppLabels;
}

/** The receipt and notice emails (src/services/delivery/email-templates.ts). */
export interface EmailLabels {
  greeting: (name: string) => string;
  footer: string;
  /** "the Pro subscription", or the subscription when its plan is not named. */
  subscription: (plan: string) => string;
  facts: {
    order: string;
    amount: string;
    bank: string;
    vaNumber: string;
    billerCode: string;
    billKey: string;
    qrCode: string;
    paymentMethod: string;
    payBefore: string;
    amountPaid: string;
    paidOn: string;
    invoice: string;
    transaction: string;
    reason: string;
    refunded: string;
    originalAmount: string;
    refundedTo: string;
    plan: string;
    currentPeriodEnds: string;
    amountDue: string;
    canceledOn: string;
    pausedOn: string;
    nextBillingDate: string;
    currentPlan: string;
    newPlan: string;
    changesOn: string;
    previousPlan: string;
    proratedCharge: string;
    creditedToWallet: string;
    amountCharged: string;
    renewedUntil: string;
    endedOn: string;
    billingCycles: string;
    trialEnds: string;
    priceAfterTrial: string;
    walletBalance: string;
    chargedBack: string;
    cardValidUntil: string;
    nextRenewal: string;
  };
  refundDestinations: { gateway: string; wallet: string };
  actions: { openQr: string; payInApp: string; verifyCard: string };
  paymentPending: {
    /** `order` is empty when the event names none. */
    subject: (order: string, amount: string) => string;
    heading: string;
    transfer: (amount: string, bank: string) => string;
    billPayment: (amount: string) => string;
    scanQr: (amount: string, method: string) => string;
    verifyCard: (amount: string) => string;
    complete: (amount: string) => string;
  };
  paymentSucceeded: { subject: (amount: string, order: string) => string; heading: string; body: string };
  paymentFailed: { subject: (order: string) => string; heading: string; body: string };
  paymentRefunded: { subject: (amount: string, order: string) => string; heading: string; body: string };
  subscriptionActivated: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  subscriptionPastDue: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  subscriptionCanceled: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  subscriptionPaused: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  subscriptionResumed: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  /** `from` is empty when the event does not name the previous plan. */
  planChangeScheduled: { subject: (from: string, to: string) => string; heading: string; body: string };
  planChanged: { subject: (from: string, to: string) => string; heading: string; body: string; newPlan: string };
  subscriptionRenewed: { subject: (subscription: string, until: string) => string; heading: string; body: (subscription: string) => string };
  subscriptionExpired: { subject: (subscription: string) => string; heading: string; body: (subscription: string) => string };
  trialWillEnd: { subject: (plan: string, ends: string) => string; heading: string; body: (subscription: string) => string };
  topupSucceeded: { subject: (amount: string) => string; heading: string; body: (amount: string) => string };
  topupFailed: { subject: (order: string) => string; heading: string; body: string };
  topupExpired: { subject: (order: string) => string; heading: string; body: string };
  paymentCreditedToWallet: { subject: (amount: string, order: string) => string; heading: string; body: (credited: boolean) => string };
  paymentReversed: { subject: (order: string) => string; heading: string; topup: string; invoice: string };
  paymentChargedBack: { subject: (order: string) => string; heading: string; topup: string; partly: (amount: string) => string; invoice: string };
  cardExpiring: { subject: string; heading: string; body: (subscription: string) => string };
  paymentMethodRequired: { subject: string; heading: string; body: (subscription: string) => string };
}

/** What an in-app notification reads (src/services/notifications/notification-content.ts). */
export interface InAppLabels {
  titles: {
    paymentPending: string;
    paymentSucceeded: string;
    paymentFailed: string;
    paymentCreditedToWallet: string;
    paymentRefunded: string;
    subscriptionActivated: string;
    subscriptionPastDue: string;
    subscriptionCanceled: string;
    subscriptionPaused: string;
    subscriptionResumed: string;
    subscriptionPlanChanged: string;
    subscriptionRenewed: string;
    subscriptionExpired: string;
    trialWillEnd: string;
    topupSucceeded: string;
    topupFailed: string;
    topupExpired: string;
    paymentReversed: string;
    paymentChargedBack: string;
    cardExpiring: string;
    paymentMethodRequired: string;
  };
  /** "order SUB-1", "wallet top-up TOPUP-1". */
  what: (order: string, topup: boolean) => string;
  /** How to pay, to follow "Please pay X for order Y"; each returns the phrase with its leading space. */
  instructions: {
    va: (bank: string, number: string) => string;
    billKey: (billKey: string, billerCode: string) => string;
    qr: (url: string, app: string) => string;
    app: (url: string) => string;
    card: (url: string) => string;
  };
  paymentPending: (amount: string, what: string, instructions: string, before: string) => string;
  paymentSucceeded: (amount: string, order: string) => string;
  paymentFailed: (order: string, status: string) => string;
  paymentCreditedToWallet: (amount: string, order: string, reason: string, credited: boolean) => string;
  paymentRefunded: (amount: string, order: string) => string;
  subscriptionActivated: (plan: string) => string;
  subscriptionPastDue: (plan: string) => string;
  subscriptionCanceled: (plan: string) => string;
  subscriptionPaused: (plan: string) => string;
  subscriptionResumed: (plan: string) => string;
  subscriptionPlanChanged: (from: string, to: string) => string;
  subscriptionRenewed: (plan: string, until: string) => string;
  subscriptionExpired: (plan: string) => string;
  trialWillEnd: (plan: string, ends: string) => string;
  topupSucceeded: (amount: string) => string;
  topupFailed: (order: string) => string;
  topupExpired: (order: string) => string;
  paymentReversed: (amount: string, what: string, topup: boolean) => string;
  /** `partly`: only part was taken and the subscription is unchanged. */
  paymentChargedBack: (amount: string, what: string, topup: boolean, partly: boolean) => string;
  cardExpiring: (plan: string, expires: string, renewal: string) => string;
  /** The saved card was forgotten (a chargeback): the next renewal needs a new payment method. */
  paymentMethodRequired: (plan: string, order: string) => string;
}
