import type { Config } from '../../config.js';
import type { Invoice, SellerTaxIdentity } from '../../db/entities/invoice.js';

/*
 * NOTE: an invoice names the seller as it stood when the invoice was made (docs/tax.md, "The
 * seller"): a later change of BILLING_TAX_ID, BILLING_SELLER_NITKU or the company name never
 * reprints an issued invoice or its faktur. Invoices made before the identity was kept fall back
 * to the configuration.
 */

/** The seller as the configuration names it now. */
export function currentSellerIdentity(config: Pick<Config, 'tax' | 'documents'>): SellerTaxIdentity {
  return { npwp: config.tax.sellerTaxId, nitku: config.tax.sellerNitku, name: config.documents.companyName || null };
}

/** The seller an invoice names: the one it was made with, else (an old invoice) the configuration's. */
export function sellerIdentityOf(invoice: Pick<Invoice, 'sellerTaxIdentity'>, config: Pick<Config, 'tax' | 'documents'>): SellerTaxIdentity {
  const now = currentSellerIdentity(config);
  const kept = invoice.sellerTaxIdentity;
  if (!kept) return now;
  return { npwp: kept.npwp ?? now.npwp, nitku: kept.nitku ?? now.nitku, name: kept.name ?? now.name };
}
