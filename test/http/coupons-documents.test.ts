import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Coupon } from '../../src/db/entities/coupon.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { PlanSeed } from '../../src/services/plans/seed-plans.js';
import { makeCoupon, makePromotionCode } from '../helpers/coupons.js';
import { DATABASES, type DatabaseKind } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, fundWallet, subscribe } from '../helpers/subscriptions.js';

/*
 * Issue 41 (docs/pricing.md, docs/documents.md): a discounted invoice's PDF says each line's
 * discount under it and the invoice's discount total on its own row between the subtotal and
 * the DPP (Diskon / Discount); the subtotal and the lines keep the price before the discount.
 * An invoice without a discount shows no such row, in Bahasa Indonesia and in English.
 */

const SELLER = {
  BILLING_PKP: 'true',
  BILLING_TAX_ID: '0012345678091000',
  BILLING_SELLER_NITKU: '0012345678091000000000',
  BILLING_COMPANY_NAME: 'PT Contoh Langganan Indonesia',
};
const PLANS: PlanSeed[] = [
  { slug: 'pro-tax', name: 'Pro', price: 150000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'exclusive' },
  { slug: 'team-incl', name: 'Team', price: 300000, currency: 'IDR', interval: 1, interval_unit: 'month', tax_behavior: 'inclusive' },
  { slug: 'seats', name: 'Seats', price: 40000, currency: 'IDR', interval: 1, interval_unit: 'month', per_unit: true },
];
const START = new Date('2026-03-10T03:00:00.000Z');

/** pdftotext keeps the layout; compare with runs of spaces made one. */
const squash = (text: string) => text.replace(/[ \t]+/g, ' ');

function documentsIn(kind: DatabaseKind, locale: 'id-ID' | 'en-US') {
  let server: TestServer;
  let quarter: Coupon;
  let fifty: Coupon;
  const clock = new ManualClock(START);

  beforeAll(async () => {
    server = await startTestServer(kind, { clock, env: { ...SELLER, BILLING_LOCALE: locale } });
    await server.seedPlans(PLANS);
    const em = dbOf(server) as EntityManager;
    quarter = await makeCoupon(em, { percentOff: '25.00' });
    fifty = await makeCoupon(em, { amountOff: '50000.00', currency: 'IDR' });
  });
  afterAll(() => server?.stop());

  /** A new customer subscribes from the wallet (with `coupon`'s promotion code when given); the first invoice's PDF as text. */
  async function invoicePdf(plan: string, coupon: Coupon | null, extra: Record<string, unknown> = {}): Promise<string> {
    const user = await server.createUser();
    await fundWallet(server, user, '1000000');
    const promo = coupon ? await makePromotionCode(dbOf(server) as EntityManager, { coupon }) : null;
    const created = await subscribe(server, user, { plan_id: plan, payment_type: 'wallet', ...(promo ? { promotion_code: promo.code } : {}), ...extra });
    expect(created.status, created.text).toBe(201);
    const res = await fetch(`${server.url}/api/subscriptions/invoices/${created.body.payment.invoice_id}/pdf/`, {
      headers: { authorization: `Basic ${Buffer.from(`${user.username}:${user.password}`).toString('base64')}` },
    });
    expect(res.status).toBe(200);
    return squash(await pdfText(Buffer.from(await res.arrayBuffer())));
  }

  return { invoicePdf, coupons: () => ({ quarter, fifty }) };
}

describe.each(DATABASES)('discounted invoice PDFs in Bahasa Indonesia on %s', (kind) => {
  const { invoicePdf, coupons } = documentsIn(kind, 'id-ID');

  it('25 % off an exclusive Rp 150.000: the line says its discount, Diskon sits between Subtotal and DPP, PPN is on the discounted DPP', async () => {
    const text = await invoicePdf('pro-tax', coupons().quarter);
    expect(text).toMatch(/Diskon -Rp 37\.500\n/);
    expect(text).toMatch(/Subtotal Rp 150\.000\s+Diskon -Rp 37\.500\s+DPP Rp 112\.500\s+DPP Nilai Lain \(11\/12\) Rp 103\.125\s+PPN 12% Rp 12\.375/);
    expect(text).toMatch(/Total Rp 124\.875/);
    expect(text).toMatch(/Dibayar Rp 124\.875/);
  });

  it('Rp 50.000 off an inclusive Rp 300.000: Diskon, then the DPP and PPN the Rp 250.000 holds', async () => {
    const text = await invoicePdf('team-incl', coupons().fifty);
    expect(text).toMatch(/Subtotal Rp 300\.000\s+Diskon -Rp 50\.000\s+DPP Rp 225\.225\s+DPP Nilai Lain \(11\/12\) Rp 206\.456,25\s+PPN 12% Rp 24\.775/);
    expect(text).toMatch(/Total Rp 250\.000/);
  });

  it('an untaxed seat plan: 5 × Rp 40.000 with 25 % off shows the quantity, the price before the discount and the discount; Total after it', async () => {
    const text = await invoicePdf('seats', coupons().quarter, { quantity: 5 });
    expect(text).toMatch(/\b5 Rp 40\.000 Rp 200\.000/);
    expect(text).toMatch(/Subtotal Rp 200\.000\s+Diskon -Rp 50\.000\s+Total Rp 150\.000/);
    expect(text).not.toContain('DPP');
  });

  it('without a discount nothing changes: no Diskon row, no line discount', async () => {
    const text = await invoicePdf('pro-tax', null);
    expect(text).not.toContain('Diskon');
    expect(text).toMatch(/Subtotal Rp 150\.000\s+DPP Rp 150\.000/);
    expect(text).toMatch(/Total Rp 166\.500/);
  });
});

describe.each(DATABASES)('discounted invoice PDFs in English on %s', (kind) => {
  const { invoicePdf, coupons } = documentsIn(kind, 'en-US');

  it('the line and the totals say Discount; without one, nothing does', async () => {
    const text = await invoicePdf('pro-tax', coupons().quarter);
    expect(text).toMatch(/Discount -IDR\s?37,500\n/);
    expect(text).toMatch(/Subtotal IDR\s?150,000\s+Discount -IDR\s?37,500\s+DPP \(tax base\) IDR\s?112,500/);
    const plain = await invoicePdf('pro-tax', null);
    expect(plain).not.toContain('Discount');
  });
});
