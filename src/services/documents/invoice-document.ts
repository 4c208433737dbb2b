import { CreditNote } from '../../db/entities/credit-note.js';
import type { Invoice, InvoiceLine } from '../../db/entities/invoice.js';
import { Payment, Refund, type PaymentStatus } from '../../db/entities/payment.js';
import { add, compare, isZero, subtract, ZERO } from '../../domain/money.js';
import type { DataContext } from '../context.js';
import { buyerOf, creditDestinationOf, customerOf, isTaxed, paymentMethodOf, sellerOf } from './document-parts.js';
import type { DocumentLine, DocumentSection, DocumentView } from './document-view.js';
import type { DocumentFormat } from './format.js';
import type { Labels } from './labels/labels.js';
import { localisation } from './labels/localisation.js';
import { lineWordsFor } from './line-words.js';

/** A payment that brought money in (and may since have been refunded). */
const PAID_STATUSES: PaymentStatus[] = ['settled', 'refunded', 'partially_refunded'];

function period(format: DocumentFormat, start: Date | null, end: Date | null): string {
  if (!start || !end) return '';
  return `${format.shortDate(start)} – ${format.shortDate(end)}`;
}

function lineDetail(format: DocumentFormat, labels: Labels, line: InvoiceLine): string {
  const span = period(format, line.periodStart, line.periodEnd);
  if (line.kind === 'proration') return labels.invoice.lineDetail.proration(span || null);
  if (line.kind === 'credit') return labels.invoice.lineDetail.credit(span || null);
  return span;
}

function stampOf(invoice: Invoice, labels: Labels): DocumentView['stamp'] {
  const stamps = labels.invoice.stamps;
  if (invoice.status === 'paid' && !isZero(invoice.amountRefunded)) {
    return { text: compare(invoice.amountRefunded, invoice.totalAmount) >= 0 ? stamps.refunded : stamps.partiallyRefunded, tone: 'neutral' };
  }
  const tones = { paid: 'good', open: 'warning', void: 'neutral', uncollectible: 'warning' } as const;
  return { text: stamps[invoice.status], tone: tones[invoice.status] };
}

/** The invoice's state in words: paid, or refunded in full or in part, charged back, due… */
function statusOf(invoice: Invoice, chargedBack: string, labels: Labels, money: (amount: string) => string): string {
  const words: string[] = [];
  if (invoice.status === 'paid' && !isZero(invoice.amountRefunded)) {
    words.push(compare(invoice.amountRefunded, invoice.totalAmount) >= 0 ? labels.invoice.refundedInFull : labels.invoice.refundedInPart(money(invoice.amountRefunded)));
  } else {
    words.push(labels.invoice.statuses[invoice.status]);
  }
  if (!isZero(chargedBack)) words.push(labels.invoice.chargedBack(money(chargedBack)));
  return words.join('; ');
}

/** "12.00" → "12": the rate as the PPN line names it. */
function rateOf(format: DocumentFormat, rate: string): string {
  return format.money(rate, '');
}

/**
 * How to pay a due invoice, from its newest pending payment's payment_details (docs/documents.md):
 * the bank and virtual account number, Mandiri's biller code and bill key, the QR code's
 * address, the app link or the card's verification page, with the amount and the time it
 * expires. Null when nothing is pending or the payment names no way to pay.
 * NOTE: a QR code is known to us only as the gateway's URL of its image; fetching an image
 * while rendering would tie every PDF to the gateway being up and quick, so the document
 * prints the address and says what to do with it.
 */
function howToPay(pending: Payment, labels: Labels, format: DocumentFormat, money: (amount: string) => string): DocumentSection | null {
  const t = labels.invoice.howToPay;
  const details = pending.paymentDetails as Record<string, unknown>;
  const text = (key: string) => (typeof details[key] === 'string' ? (details[key] as string).trim() : '');
  const amount = money(pending.grossAmount);
  const method = labels.paymentMethods[pending.paymentType] ?? pending.paymentType;
  const rows: string[][] = [];
  let note = '';
  if (text('va_number')) {
    const bank = text('bank').toUpperCase();
    note = t.transfer(amount, bank);
    if (bank) rows.push([t.bank, bank]);
    rows.push([t.vaNumber, text('va_number')]);
  } else if (text('bill_key')) {
    note = t.billPayment(amount);
    rows.push([t.billerCode, text('biller_code')], [t.billKey, text('bill_key')]);
  } else if (text('qr_code_url')) {
    note = t.scanQr(amount, pending.paymentType === 'qris' ? '' : method);
    rows.push([t.qrCode, text('qr_code_url')]);
    if (text('deeplink_url')) rows.push([t.appLink, text('deeplink_url')]);
  } else if (text('deeplink_url')) {
    note = t.openApp(amount, method);
    rows.push([t.appLink, text('deeplink_url')]);
  } else if (text('redirect_url')) {
    note = t.verifyCard(amount);
    rows.push([t.cardPage, text('redirect_url')]);
  } else {
    return null;
  }
  rows.push([t.amount, amount], [t.order, pending.orderId]);
  const expiry = text('expiry_time') ? new Date(text('expiry_time')) : pending.expiresAt;
  if (expiry && !Number.isNaN(expiry.getTime())) rows.push([t.expires, format.dateTime(expiry)]);
  return { heading: t.heading, note, rows };
}

/**
 * Everything an invoice PDF shows, gathered from the database, in BILLING_LOCALE and
 * BILLING_TIMEZONE: seller, customer (on a taxed invoice the two parties' tax numbers), dates
 * and period, every line, totals (with DPP, DPP Nilai Lain, PPN and any rounding when taxed),
 * the payment that paid it or how to pay it, and the refunds and credit notes against it.
 */
export async function invoiceDocumentView(ctx: Pick<DataContext, 'em' | 'config'>, invoice: Invoice): Promise<DocumentView> {
  const settings = ctx.config.documents;
  const { labels, format } = localisation(settings);
  const t = labels.invoice;
  const money = (amount: string) => format.money(amount, invoice.currency);
  const em = ctx.em;
  await em.populate(invoice, ['lines', 'subscription', 'user']);
  const taxed = isTaxed(invoice, ctx.config);

  const payments = await em.find(Payment, { invoice, status: { $in: [...PAID_STATUSES, 'charged_back'] } }, { orderBy: [{ paidAt: 'asc' }, { createdAt: 'asc' }] });
  const payment = payments.find((p) => PAID_STATUSES.includes(p.status)) ?? null;
  const chargedBack = add(ZERO, ...payments.map((p) => p.chargebackAmount));
  const pending = invoice.status === 'open' ? await em.findOne(Payment, { invoice, status: 'pending' }, { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] }) : null;
  const notes = await em.find(CreditNote, { invoice }, { orderBy: [{ issuedAt: 'asc' }, { number: 'asc' }], populate: ['refund', 'payment'] });
  const refunds = await em.find(Refund, { payment: { invoice }, status: 'succeeded' }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }], populate: ['payment'] });

  const facts: [string, string][] = [
    [t.facts.issueDate, format.day(invoice.issueDate)],
    [t.facts.dueDate, format.day(invoice.dueDate)],
  ];
  if (invoice.paidAt) facts.push([t.facts.paidOn, format.date(invoice.paidAt)]);
  const lines = invoice.lines.getItems();
  const periodText =
    period(format, invoice.periodStart, invoice.periodEnd) ||
    period(format, lines.find((l) => l.periodStart)?.periodStart ?? null, [...lines].reverse().find((l) => l.periodEnd)?.periodEnd ?? null);
  if (periodText) facts.push([t.facts.period, periodText]);
  if (taxed && invoice.taxInvoiceNumber) facts.push([t.facts.taxInvoiceNumber, invoice.taxInvoiceNumber]);

  const words = lineWordsFor(settings);
  // A line's discount is said under it; its amount stays the price before the discount, as the
  // subtotal does, and the discount total comes off below (docs/pricing.md).
  const detailOf = (line: InvoiceLine) =>
    [lineDetail(format, labels, line), isZero(line.discountAmount) ? '' : t.lineDetail.discount(money(`-${line.discountAmount}`))].filter(Boolean).join(' · ');
  const documentLines: DocumentLine[] = lines.map((line) => ({
    description: words.line(line, invoice.currency),
    detail: detailOf(line),
    quantity: String(line.quantity),
    unitAmount: money(line.unitAmount),
    amount: money(line.amount),
  }));

  const totals: DocumentView['totals'] = [{ label: t.totals.subtotal, value: money(invoice.subtotal) }];
  if (!isZero(invoice.discountAmount)) totals.push({ label: t.totals.discount, value: money(`-${invoice.discountAmount}`) });
  if (taxed) {
    totals.push(
      { label: t.totals.taxBase, value: money(invoice.taxBase) },
      { label: t.totals.otherTaxBase, value: money(invoice.otherTaxBase) },
      { label: t.totals.tax(rateOf(format, invoice.taxRate)), value: money(invoice.taxAmount) },
    );
    if (!isZero(invoice.taxRounding)) totals.push({ label: t.totals.rounding, value: money(invoice.taxRounding) });
  }
  totals.push({ label: t.totals.total, value: money(invoice.totalAmount), strong: true });
  if (invoice.status === 'paid') totals.push({ label: t.totals.amountPaid, value: money(invoice.totalAmount) });
  // Refunds are on the invoice already; wallet credits (proration, unusable settlements) only in
  // their credit notes; a chargeback's money went back to the card, not to the wallet.
  const walletCredits = add(ZERO, ...notes.filter((n) => n.reason !== 'refund' && n.reason !== 'chargeback').map((n) => n.amount));
  const paidChargeback = invoice.status === 'paid' ? chargedBack : ZERO;
  if (!isZero(invoice.amountRefunded)) totals.push({ label: t.totals.refunded, value: money(`-${invoice.amountRefunded}`) });
  if (!isZero(walletCredits)) totals.push({ label: t.totals.creditedToWallet, value: money(`-${walletCredits}`) });
  if (!isZero(paidChargeback)) totals.push({ label: t.totals.chargedBack, value: money(`-${paidChargeback}`) });
  if (!isZero(invoice.amountRefunded) || !isZero(walletCredits) || !isZero(paidChargeback)) {
    totals.push({ label: t.totals.netPaid, value: money(subtract(invoice.totalAmount, add(invoice.amountRefunded, walletCredits, paidChargeback))) });
  }
  if (invoice.status === 'open') totals.push({ label: t.totals.amountDue, value: money(invoice.totalAmount) });

  const paymentRows: string[][] = [[t.payment.status, statusOf(invoice, chargedBack, labels, money)]];
  if (payment) {
    paymentRows.push([t.payment.method, paymentMethodOf(payment, labels)]);
    if (payment.paidAt) paymentRows.push([t.payment.paidAt, format.dateTime(payment.paidAt)]);
    paymentRows.push([t.payment.order, payment.orderId]);
    if (payment.transactionId) paymentRows.push([t.payment.transaction, payment.transactionId]);
  }
  const instructions = pending ? howToPay(pending, labels, format, money) : null;
  if (invoice.status === 'open' && !instructions) paymentRows.push([t.payment.payBy, format.day(invoice.dueDate)]);

  // Each credit note documents a refund or a wallet credit; a refund from before credit notes
  // existed has none and is listed by itself.
  const documented = new Set(notes.map((n) => n.refund?.id).filter(Boolean));
  const adjustments = t.adjustments;
  const adjustmentRows = [
    ...notes.map((note) => ({
      at: note.issuedAt,
      row: [format.shortDate(note.issuedAt), adjustments.creditNote(note.number), `${labels.creditReasons[note.reason]} ${creditDestinationOf(note, labels)}`, money(`-${note.amount}`)],
    })),
    ...refunds
      .filter((refund) => !documented.has(refund.id))
      .map((refund) => ({
        at: refund.createdAt,
        row: [format.shortDate(refund.createdAt), adjustments.refund, `${labels.creditReasons.refund} ${creditDestinationOf({ reason: 'refund', refund, payment: refund.payment }, labels)}`, money(`-${refund.amount}`)],
      })),
  ]
    .sort((a, b) => a.at.getTime() - b.at.getTime())
    .map((a) => a.row);
  const sections: DocumentSection[] = [
    ...(instructions ? [instructions] : []),
    { heading: t.payment.heading, rows: paymentRows },
    { heading: adjustments.heading, columns: [adjustments.date, adjustments.document, adjustments.details, adjustments.amount], rows: adjustmentRows },
  ];

  const details = invoice.subscription?.customerDetails;
  return {
    title: t.title,
    number: invoice.number,
    issuedAt: invoice.createdAt,
    seller: sellerOf(ctx.config, labels, taxed, invoice),
    customer: taxed ? buyerOf(invoice.user, details, invoice.buyerTaxProfile, labels) : customerOf(invoice.user, details, t.billTo),
    facts,
    stamp: stampOf(invoice, labels),
    lines: documentLines,
    totals,
    sections,
    footer: [settings.companyName, `${t.title} ${invoice.number}`, labels.document.amountsIn(invoice.currency)],
    layout: { columns: labels.document.columns, page: labels.document.page },
  };
}
