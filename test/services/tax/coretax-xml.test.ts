import { describe, expect, it } from 'vitest';
import { create } from 'xmlbuilder2';
import { coretaxXml, MAX_FAKTURS_PER_FILE, unitOfPeriod, type CoretaxFaktur } from '../../../src/services/tax/coretax-xml.js';
import { numberedPath } from '../../../src/services/tax/export-coretax.js';
import { fakturLines } from '../../../src/services/tax/faktur-lines.js';
import { lineWordsFor } from '../../../src/services/documents/line-words.js';
import { fakturValueOf } from '../../../src/domain/tax.js';
import { normaliseFakturNumber } from '../../../src/services/tax/record-tax-invoice.js';
import { isInMonth, localDate, parseTaxMonth, uploadDeadline } from '../../../src/services/tax/tax-month.js';

const SELLER = { tin: '0012345678091000', idtku: '0012345678091000000000' };
const faktur = (over: Partial<CoretaxFaktur> = {}): CoretaxFaktur => ({
  date: '2026-03-05',
  reference: 'INV-2026-000001',
  buyer: { buyer_type: 'business', npwp: '0012345678091000', nitku: '0012345678091000000000', nik: null, passport: null, country: null, document_number: null, name: 'PT A', address: 'Jakarta', email: null },
  lines: [{ name: 'Pro', unit: 'UM.0024', price: '150000.00', quantity: 1, discount: '0.00', taxBase: '150000.00', otherTaxBase: '137500.00', vat: '16500.00' }],
  taxBase: '150000.00',
  otherTaxBase: '137500.00',
  vat: '16500.00',
  ...over,
});

describe('the Coretax XML', () => {
  it('escapes what XML reserves and drops what it cannot hold, and reads back as written', () => {
    const name = 'PT <Maju> & "Jaya" \'s\u0007 Tbk';
    const xml = coretaxXml(SELLER, [faktur({ buyer: { ...faktur().buyer, name, address: 'Jl. A & B\r\nBandung' }, lines: [{ ...faktur().lines[0], name: 'Pro <annual> & more' }] })]);
    expect(xml).toContain('<BuyerName>PT &lt;Maju&gt; &amp; "Jaya" \'s Tbk</BuyerName>');
    expect(xml).toContain('<BuyerAdress>Jl. A &amp; B Bandung</BuyerAdress>');
    expect(xml).toContain('<Name>Pro &lt;annual&gt; &amp; more</Name>');
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<TaxInvoiceBulk xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="TaxInvoice.xsd">')).toBe(true);
    expect(xml).toContain('<AddInfo/>');
    const root = create(xml).root().node as unknown as { getElementsByTagName(name: string): ArrayLike<{ textContent: string | null }> };
    expect(root.getElementsByTagName('BuyerName')[0].textContent).toBe('PT <Maju> & "Jaya" \'s Tbk');
  });

  it('a discounted line: Price is the DPP before the discount, TotalDiscount the discount before PPN, TaxBase what is left (Price × Qty − TotalDiscount = TaxBase, as Odoo fills it)', () => {
    const line = { name: 'Pro', unit: 'UM.0024' as const, price: '150000.00', quantity: 1, discount: '37500.00', taxBase: '112500.00', otherTaxBase: '103125.00', vat: '12375.00' };
    const xml = coretaxXml(SELLER, [faktur({ lines: [line], taxBase: '112500.00', otherTaxBase: '103125.00', vat: '12375.00' })]);
    expect(xml).toMatch(/<Price>150000\.00<\/Price>\s*<Qty>1<\/Qty>\s*<TotalDiscount>37500\.00<\/TotalDiscount>\s*<TaxBase>112500\.00<\/TaxBase>\s*<OtherTaxBase>103125\.00<\/OtherTaxBase>/);
  });
});

describe('the lines of a faktur', () => {
  const words = lineWordsFor({ locale: 'id-ID', timeZone: 'Asia/Jakarta' });
  const line = (position: number, over: Record<string, unknown>) => ({
    position, kind: 'subscription' as const, quantity: 1, amount: '0.00', discountAmount: '0.00', periodStart: null, periodEnd: null, subject: null, description: `line ${position}`, ...over,
  }) as Parameters<typeof fakturLines>[1][number];
  const sum = (values: string[]) => values.reduce((s, v) => s + Number(v) * 100, 0) / 100;
  const holds = (lines: ReturnType<typeof fakturLines>) => lines.every((l) => Math.round(Number(l.price) * 100) * l.quantity - Math.round(Number(l.discount) * 100) === Math.round(Number(l.taxBase) * 100));

  it('an inclusive price with a discount: the DPP before and after it, and the discount in DPP (Rp 50,000 off Rp 300,000: 270,270 − 45,045 = 225,225)', () => {
    const [team] = fakturLines({ currency: 'IDR' }, [line(0, { amount: '300000.00', discountAmount: '50000.00' })], fakturValueOf('225225.00', 'IDR'), words);
    expect(team).toMatchObject({ price: '270270.00', discount: '45045.00', taxBase: '225225.00', otherTaxBase: '206456.25', vat: '24775.00' });
  });

  it('a refund before the export shrinks price and discount alike: a 25 % discount stays 25 %, never the refund shown as a discount', () => {
    const [pro] = fakturLines({ currency: 'IDR' }, [line(0, { amount: '150000.00', discountAmount: '37500.00' })], fakturValueOf('39375.00', 'IDR'), words);
    expect(pro).toMatchObject({ price: '52500.00', discount: '13125.00', taxBase: '39375.00' });
  });

  it('one line per line that charges, named with its period; a credit line is not a line, and the lines add up to the faktur to the rupiah', () => {
    const lines = [
      line(0, { kind: 'proration', amount: '-33333.00', description: 'Unused time on Basic' }),
      line(1, { kind: 'subscription', amount: '99000.00', quantity: 1, subject: { type: 'first_period', plan: 'Pro', count: 1, unit: 'month' }, periodStart: new Date('2026-11-01T00:00:00Z'), periodEnd: new Date('2026-12-01T00:00:00Z') }),
      line(2, { kind: 'usage', amount: '207253.00', subject: { type: 'usage', metric: 'calls', metric_name: 'API calls', units: '12' }, periodStart: new Date('2026-11-01T00:00:00Z'), periodEnd: new Date('2026-12-01T00:00:00Z') }),
      line(3, { kind: 'proration', amount: '100000.00', quantity: 3, discountAmount: '10000.00', subject: { type: 'remaining_time', plan: 'Pro' } }),
    ];
    const value = fakturValueOf('362920.00', 'IDR');
    const made = fakturLines({ currency: 'IDR' }, lines, value, words);
    expect(made.map((l) => [l.name, l.unit, l.quantity])).toEqual([
      ['Pro (1 bulan pertama), 1 November 2026 s.d. 1 Desember 2026', 'UM.0024', 1],
      ['Pemakaian API calls: 12, 1 November 2026 s.d. 1 Desember 2026', 'UM.0033', 1],
      ['Sisa waktu pada Pro', 'UM.0033', 3],
    ]);
    expect([sum(made.map((l) => l.taxBase)), sum(made.map((l) => l.otherTaxBase)), sum(made.map((l) => l.vat))]).toEqual([362920, Number(value.otherTaxBase), Number(value.taxAmount)]);
    expect(holds(made)).toBe(true);
    for (const l of made) expect(Math.abs(Number(l.vat) - Number(l.otherTaxBase) * 0.12)).toBeLessThan(1);
  });

  it('a unit price that cannot be written to the cent is rounded up and the cents go to the discount', () => {
    const [seats] = fakturLines({ currency: 'IDR' }, [line(0, { kind: 'proration', amount: '100000.00', quantity: 3 })], fakturValueOf('100000.00', 'IDR'), words);
    expect(seats).toMatchObject({ price: '33333.34', quantity: 3, discount: '0.02', taxBase: '100000.00' });
  });
});

describe('the Coretax file', () => {
  it('refuses more than 1,000 fakturs in one file', () => {
    expect(() => coretaxXml(SELLER, Array.from({ length: MAX_FAKTURS_PER_FILE + 1 }, () => faktur()))).toThrow(RangeError);
  });
});

describe('units, months, file names and faktur numbers', () => {
  it('a subscription line over a calendar month is Bulan, over a year Tahun, anything else Lainnya', () => {
    const at = (iso: string) => new Date(iso);
    expect(unitOfPeriod('subscription', at('2026-02-01T00:00:00Z'), at('2026-03-01T00:00:00Z'))).toBe('UM.0024');
    expect(unitOfPeriod('subscription', at('2026-01-31T00:00:00Z'), at('2026-03-05T00:00:00Z'))).toBe('UM.0033');
    expect(unitOfPeriod('subscription', at('2026-01-01T00:00:00Z'), at('2027-01-01T00:00:00Z'))).toBe('UM.0023');
    expect(unitOfPeriod('subscription', at('2026-01-01T00:00:00Z'), at('2026-01-08T00:00:00Z'))).toBe('UM.0033');
    expect(unitOfPeriod('proration', at('2026-02-01T00:00:00Z'), at('2026-03-01T00:00:00Z'))).toBe('UM.0033');
    expect(unitOfPeriod('subscription', null, null)).toBe('UM.0033');
  });

  it('months are YYYY-MM; dates and months are read in the time zone given', () => {
    expect(parseTaxMonth('2026-03')).toEqual({ year: 2026, month: 3, label: '2026-03' });
    for (const bad of ['2026-00', '2026-13', '2026-3', '26-03', '2026/03', '']) expect(parseTaxMonth(bad)).toBeNull();
    const lateOnTheLastDay = new Date('2026-03-31T17:00:00.000Z');
    expect(localDate(lateOnTheLastDay, 'Asia/Jakarta')).toBe('2026-04-01');
    expect(localDate(lateOnTheLastDay, 'UTC')).toBe('2026-03-31');
    expect(isInMonth(lateOnTheLastDay, parseTaxMonth('2026-04')!, 'Asia/Jakarta')).toBe(true);
    expect(isInMonth(new Date('2026-03-31T16:59:59.999Z'), parseTaxMonth('2026-04')!, 'Asia/Jakarta')).toBe(false);
    expect(uploadDeadline(parseTaxMonth('2026-12')!)).toBe('2027-01-20');
  });

  it('more files are numbered before the extension', () => {
    expect(['out.xml', 'dir/out.xml', 'out'].map((p) => numberedPath(p, 2))).toEqual(['out-2.xml', 'dir/out-2.xml', 'out-2']);
    expect(numberedPath('out.xml', 1)).toBe('out.xml');
  });

  it('a Faktur Pajak number is 17 digits; dots, dashes and spaces are dropped', () => {
    expect(normaliseFakturNumber('04.00-25.00000000001')).toBe('04002500000000001');
    expect(normaliseFakturNumber(' 040 025 000 000 000 01 ')).toBe('04002500000000001');
    for (const bad of ['0400250000000001', '040025000000000012', '04002500000000O01', '']) expect(normaliseFakturNumber(bad)).toBeNull();
  });
});
