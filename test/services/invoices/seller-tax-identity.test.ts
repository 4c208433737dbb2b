import { describe, expect, it } from 'vitest';
import { sellerIdentityOf } from '../../../src/services/invoices/seller-tax-identity.js';
import { lineWordsFor } from '../../../src/services/documents/line-words.js';

/* Issue 37: the seller frozen on each invoice, and line words rendered in the document's language. */

const config = {
  tax: { pkp: true, sellerTaxId: '0099988877766000', sellerNitku: '0099988877766000000000' },
  documents: { companyName: 'PT Baru', companyAddress: [], taxId: '', logoPath: null, locale: 'id-ID', timeZone: 'Asia/Jakarta' },
};

describe('the seller an invoice names', () => {
  it('is the one it was made with; an old invoice without one falls back to the configuration', () => {
    const kept = { npwp: '0012345678091000', nitku: '0012345678091000000000', name: 'PT Lama' };
    expect(sellerIdentityOf({ sellerTaxIdentity: kept }, config)).toEqual(kept);
    expect(sellerIdentityOf({ sellerTaxIdentity: null }, config)).toEqual({ npwp: '0099988877766000', nitku: '0099988877766000000000', name: 'PT Baru' });
  });
});

describe('line words', () => {
  const id = lineWordsFor({ locale: 'id-ID', timeZone: 'Asia/Jakarta' });
  const en = lineWordsFor({ locale: 'en-US', timeZone: 'Asia/Jakarta' });
  const line = (subject: Record<string, string | number> | null, description = 'stored words') => ({ description, subject: subject as never });

  it('render what the line is in the document language', () => {
    expect(id.line(line({ type: 'remaining_time', plan: 'Pro' }))).toBe('Sisa waktu pada Pro');
    expect(en.line(line({ type: 'remaining_time', plan: 'Pro' }))).toBe('Remaining time on Pro');
    expect(id.line(line({ type: 'first_period', plan: 'Pro', count: 3, unit: 'month' }))).toBe('Pro (3 bulan pertama)');
    expect(en.line(line({ type: 'first_period', plan: 'Pro', count: 3, unit: 'month' }))).toBe('Pro (first 3 months)');
    expect(id.line(line({ type: 'period', plan: 'Pro', start: '2026-03-01', end: '2026-04-01' }))).toBe('Pro (1 Maret 2026 s.d. 1 April 2026)');
  });

  it('keep the stored description for a line without a subject, or of a subject they do not know', () => {
    expect(id.line(line(null, 'Remaining time on Pro'))).toBe('Remaining time on Pro');
    expect(id.line(line({ type: 'something_new', plan: 'Pro' }))).toBe('stored words');
    expect(id.line(line({ type: 'first_period', plan: 'Pro', count: 1, unit: 'fortnight' }))).toBe('stored words');
  });
});
