import type { Invoice } from '../../db/entities/invoice.js';
import { invoicePagePath } from '../../services/hosted/invoice-links.js';
import { withLang, type PageRequest } from './page-kit.js';

/** A row of the portal's invoice table. */
export interface PortalInvoiceRow {
  number: string;
  status: string;
  date: string;
  total: string;
  pdf: string;
  /** An open invoice's own hosted page, where it is paid by any method (in the portal's language). */
  payUrl: string | null;
}

/**
 * The portal's invoices, each open one with a link to its hosted page: the page pays it by any
 * method, its subscription live or ended (a usage bill left after a cancel included).
 */
export function portalInvoiceRows(page: PageRequest, invoices: Invoice[]): PortalInvoiceRow[] {
  const { t, format } = page;
  return invoices.map((inv) => ({
    number: inv.number,
    status: t(`invoice.${inv.status}`),
    date: format.date(new Date(`${inv.issueDate}T00:00:00Z`)),
    total: format.money(inv.totalAmount, inv.currency),
    pdf: `${page.path}invoices/${inv.id}/pdf`,
    payUrl: inv.status === 'open' && inv.subscription ? withLang(page, invoicePagePath(page.deps.config, inv.id)) : null,
  }));
}
