/**
 * What a document (an invoice, a credit note) shows, as plain, already formatted text in the
 * documents' language (labels/): the view builders gather and format it from the database, and
 * template.ts lays out any of them. The view is the document's version (document-renderer.ts):
 * whatever a page shows must be in it, so that a changed invoice renders anew.
 */
export interface DocumentView {
  /** "Tagihan", "Nota Kredit", "Invoice", "Credit note". */
  title: string;
  number: string;
  /** Written as the PDF's creation date, so that the same document renders to the same bytes. */
  issuedAt: Date;
  /** `heading` is "Dari" (From), or "Penjual" (Seller) on a taxed document. */
  seller: { heading: string; name: string; lines: string[]; logoPath: string | null };
  customer: { heading: string; name: string; lines: string[] };
  /** Label and value rows beside the seller: dates, the period, a related invoice. */
  facts: [string, string][];
  /** A short word on the header (PAID, OPEN, REFUNDED); null shows none. */
  stamp: { text: string; tone: 'good' | 'warning' | 'neutral' } | null;
  lines: DocumentLine[];
  totals: DocumentTotal[];
  /** Further blocks under the totals: the payment, refunds and credit notes. Empty ones are left out. */
  sections: DocumentSection[];
  /** Small print at the foot of the page. */
  footer: string[];
  /** The layout's own words: the table's column headings and the page number ("Halaman {page} dari {pages}"). */
  layout: { columns: { description: string; quantity: string; unitPrice: string; amount: string }; page: string };
}

export interface DocumentLine {
  description: string;
  /** A second, quieter line: the service period, what a proration covers. */
  detail: string;
  quantity: string;
  unitAmount: string;
  amount: string;
}

export interface DocumentTotal {
  label: string;
  value: string;
  strong?: boolean;
}

export interface DocumentSection {
  heading: string;
  /** A sentence under the heading (how to pay); empty shows none. */
  note?: string;
  /** Label and value pairs, or table rows when `columns` is given. */
  rows: string[][];
  /** Column headings of a table section (the last column is right-aligned). */
  columns?: string[];
}
