import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';
import type { Money } from '../../domain/money.js';
import type { TaxProfile } from '../../domain/tax-profile.js';

/*
 * NOTE: the Coretax import file for output tax invoices (Faktur Pajak Keluaran), `TaxInvoiceBulk`,
 * as one template in one place (docs/tax.md, "What each faktur holds"). DJP publishes no XSD: the
 * element names and order are those of Odoo's golden sample
 * (odoo/odoo addons/l10n_id_efaktur_coretax/tests/results/sample.xml), which the export test
 * checks ours against. The XML is built by xmlbuilder2, which escapes text (`&`, `<` in buyer
 * names were a known trap of string-built exports: agile-technica issue #128).
 */

/** The fixed codes of an ordinary service under DPP Nilai Lain (PMK 131/2024). */
export const CORETAX_CODES = {
  /** 04: DPP Nilai Lain, 11/12 of the selling price. */
  trxCode: '04',
  /** Imports are always Normal; replacements are made in Coretax's screens. */
  taxInvoiceOpt: 'Normal',
  /** B: services (A: goods). */
  opt: 'B',
  /** The generic code, Odoo's default for a service (models/product_template.py). */
  code: '000000',
  vatRate: '12',
  stlgRate: '0',
  /** ISO 3166 alpha-3 of Indonesia (IND is India). */
  buyerCountry: 'IDN',
} as const;

/** BuyerTin of a buyer identified by anything but an NPWP. */
const NO_TIN = '0000000000000000';
/** BuyerIDTKU of a buyer identified by anything but an NPWP. */
const NO_IDTKU = '000000';

/** Units of measure (Odoo data/l10n_id_efaktur_coretax.uom.code.csv). */
export const CORETAX_UNITS = { month: 'UM.0024', year: 'UM.0023', other: 'UM.0033' } as const;
export type CoretaxUnit = (typeof CORETAX_UNITS)[keyof typeof CORETAX_UNITS];

/** At most this many TaxInvoice elements in one import file (docs/tax.md). */
export const MAX_FAKTURS_PER_FILE = 1000;

/** The seller: its NPWP (TIN) and the NITKU of the place of business that supplies (SellerIDTKU). */
export interface CoretaxSeller {
  tin: string;
  idtku: string;
}

/** One GoodService (faktur-lines.ts makes them): amounts are two-place decimal strings, never negative. */
export interface FakturLine {
  name: string;
  unit: CoretaxUnit;
  /** Unit price before PPN and before the discount. */
  price: Money;
  quantity: number;
  /** The discount before PPN, for the whole line. */
  discount: Money;
  /** DPP: price × quantity − discount. */
  taxBase: Money;
  otherTaxBase: Money;
  vat: Money;
}

/** One faktur: one invoice, one service line per invoice line that charges. Amounts are two-place decimal strings, never negative. */
export interface CoretaxFaktur {
  /** YYYY-MM-DD, the payment's date in BILLING_TIMEZONE. */
  date: string;
  /** The invoice number: it comes back in Coretax's own exports. */
  reference: string;
  buyer: TaxProfile;
  /** The GoodService lines (faktur-lines.ts): they add up to the DPP, DPP Nilai Lain and PPN below. */
  lines: FakturLine[];
  /** DPP, after the discount */
  taxBase: Money;
  /** DPP Nilai Lain */
  otherTaxBase: Money;
  /** PPN */
  vat: Money;
}

/** The unit of a service line: a period of a calendar month is a month (Bulan), of a year a year, anything else "other". */
export function unitOfPeriod(kind: string, start: Date | null, end: Date | null): CoretaxUnit {
  if (kind !== 'subscription' || !start || !end) return CORETAX_UNITS.other;
  const days = Math.round((end.getTime() - start.getTime()) / 86_400_000);
  if (days >= 28 && days <= 31) return CORETAX_UNITS.month;
  if (days === 365 || days === 366) return CORETAX_UNITS.year;
  return CORETAX_UNITS.other;
}

/**
 * How a faktur names its buyer (docs/tax.md, "The buyer"). A business: its NPWP as TIN, its
 * NITKU as IDTKU. Anyone else has BuyerTin of zeros and IDTKU `000000` (the rule of DJP's template
 * sheet for buyers not identified by a TIN; Odoo writes the number + 000000 instead): an
 * individual's NIK as a National ID, a foreign buyer's passport with its country, another
 * document as Other ID.
 */
export function buyerIdentity(buyer: TaxProfile): { tin: string; document: string; country: string; documentNumber: string; idtku: string } {
  switch (buyer.buyer_type) {
    case 'business':
      return { tin: buyer.npwp ?? '', document: 'TIN', country: CORETAX_CODES.buyerCountry, documentNumber: '', idtku: buyer.nitku ?? `${buyer.npwp}000000` };
    case 'individual':
      return { tin: NO_TIN, document: 'National ID', country: CORETAX_CODES.buyerCountry, documentNumber: buyer.nik ?? '', idtku: NO_IDTKU };
    case 'foreign':
      return { tin: NO_TIN, document: 'Passport', country: buyer.country ?? '', documentNumber: buyer.passport ?? '', idtku: NO_IDTKU };
    case 'other':
      return { tin: NO_TIN, document: 'Other ID', country: buyer.country ?? CORETAX_CODES.buyerCountry, documentNumber: buyer.document_number ?? '', idtku: NO_IDTKU };
  }
}

/** Why a profile cannot name a faktur's buyer (a number it needs is missing), or null. */
export function missingBuyerIdentity(buyer: TaxProfile): string | null {
  const needs: Record<TaxProfile['buyer_type'], [keyof TaxProfile, string][]> = {
    business: [['npwp', 'NPWP']],
    individual: [['nik', 'NIK']],
    foreign: [['passport', 'passport number'], ['country', 'passport country']],
    other: [['document_number', 'document number']],
  };
  const missing = needs[buyer.buyer_type].filter(([field]) => !buyer[field]).map(([, words]) => words);
  return missing.length > 0 ? `its buyer tax profile has no ${missing.join(' or ')}` : null;
}

/** One line of text: the registered address may hold line breaks, an import cell may not. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

/** An element with its text, or empty (`<AddInfo/>`) when there is none. */
function element(parent: XMLBuilder, name: string, text = ''): void {
  const child = parent.ele(name);
  if (text !== '') child.txt(text);
}

/** The TaxInvoiceBulk document of `fakturs` (at most MAX_FAKTURS_PER_FILE), elements in DJP's order. */
export function coretaxXml(seller: CoretaxSeller, fakturs: CoretaxFaktur[]): string {
  if (fakturs.length > MAX_FAKTURS_PER_FILE) throw new RangeError(`at most ${MAX_FAKTURS_PER_FILE} fakturs per file, got ${fakturs.length}`);
  // Characters XML cannot hold (control characters in a typed name) are dropped, not fatal.
  const root = create({ version: '1.0', encoding: 'UTF-8', invalidCharReplacement: '' }).ele('TaxInvoiceBulk', {
    'xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance',
    'xsi:noNamespaceSchemaLocation': 'TaxInvoice.xsd',
  });
  element(root, 'TIN', seller.tin);
  const list = root.ele('ListOfTaxInvoice');
  for (const faktur of fakturs) {
    const buyer = buyerIdentity(faktur.buyer);
    const invoice = list.ele('TaxInvoice');
    element(invoice, 'TaxInvoiceDate', faktur.date);
    element(invoice, 'TaxInvoiceOpt', CORETAX_CODES.taxInvoiceOpt);
    element(invoice, 'TrxCode', CORETAX_CODES.trxCode);
    element(invoice, 'AddInfo');
    element(invoice, 'CustomDoc');
    element(invoice, 'CustomDocMonthYear');
    element(invoice, 'RefDesc', faktur.reference);
    element(invoice, 'FacilityStamp');
    element(invoice, 'SellerIDTKU', seller.idtku);
    element(invoice, 'BuyerTin', buyer.tin);
    element(invoice, 'BuyerDocument', buyer.document);
    element(invoice, 'BuyerCountry', buyer.country);
    element(invoice, 'BuyerDocumentNumber', buyer.documentNumber);
    element(invoice, 'BuyerName', oneLine(faktur.buyer.name));
    // NOTE: "Adress" is DJP's spelling in the schema itself.
    element(invoice, 'BuyerAdress', oneLine(faktur.buyer.address));
    element(invoice, 'BuyerEmail', faktur.buyer.email ?? '');
    element(invoice, 'BuyerIDTKU', buyer.idtku);
    const goods = invoice.ele('ListOfGoodService');
    for (const item of faktur.lines) {
      const line = goods.ele('GoodService');
      element(line, 'Opt', CORETAX_CODES.opt);
      element(line, 'Code', CORETAX_CODES.code);
      element(line, 'Name', oneLine(item.name));
      element(line, 'Unit', item.unit);
      // Price × Qty − TotalDiscount = TaxBase, as Coretax checks (faktur-lines.ts).
      element(line, 'Price', item.price);
      element(line, 'Qty', String(item.quantity));
      element(line, 'TotalDiscount', item.discount);
      element(line, 'TaxBase', item.taxBase);
      element(line, 'OtherTaxBase', item.otherTaxBase);
      element(line, 'VATRate', CORETAX_CODES.vatRate);
      element(line, 'VAT', item.vat);
      element(line, 'STLGRate', CORETAX_CODES.stlgRate);
      element(line, 'STLG', '0.00');
    }
  }
  return root.end({ prettyPrint: true });
}
