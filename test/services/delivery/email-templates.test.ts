import { describe, expect, it } from 'vitest';
import type { NotificationType } from '../../../src/db/entities/notification.js';
import { renderNotificationEmail } from '../../../src/services/delivery/email-templates.js';

/* BILLING_LOCALE picks the words (en-US here, id-ID below); every date is in BILLING_TIMEZONE. */
const EN = { locale: 'en-US', timeZone: 'Asia/Jakarta' };
const ID = { locale: 'id-ID', timeZone: 'Asia/Jakarta' };

const payment = { payment_id: 'pay-1', order_id: 'SUB-ORDER42', amount: '150000.00', currency: 'IDR' };
const subscription = { subscription_id: 'sub-1', plan_name: 'Pro Team', plan_slug: 'pro-monthly', current_period_end: '2026-12-22T00:00:00.000Z' };
const topup = { topup_id: 'top-1', order_id: 'TOPUP-77', amount: '250000.00', currency: 'IDR' };

/** Every notification type, with the data its event carries and what its English email must show (dates in Jakarta, UTC+7). */
const CASES: Record<NotificationType, { data: Record<string, unknown>; shows: string[] }> = {
  payment_pending: { data: { ...payment, payment_type: 'bank_transfer', bank: 'bni', va_number: '9881234567890', expiry_time: '2026-11-23T10:00:00.000Z' }, shows: ['SUB-ORDER42', 'IDR 150,000', '9881234567890', 'BNI', 'November 23, 2026 at 5:00 PM GMT+7'] },
  payment_succeeded: { data: { ...payment, payment_type: 'gopay' }, shows: ['SUB-ORDER42', 'IDR 150,000', 'GoPay', 'receipt'] },
  payment_failed: { data: { ...payment, payment_type: 'credit_card', gateway_status: 'deny' }, shows: ['SUB-ORDER42', 'IDR 150,000', 'deny'] },
  payment_refunded: { data: { ...payment, refunded_amount: '50000.00' }, shows: ['SUB-ORDER42', 'IDR 50,000', 'IDR 150,000'] },
  subscription_activated: { data: subscription, shows: ['Pro Team', 'December 22, 2026'] },
  subscription_past_due: { data: { ...subscription, status: 'past_due' }, shows: ['Pro Team', 'overdue'] },
  subscription_canceled: { data: { ...subscription, canceled_at: '2026-11-22T08:15:00.000Z', cancel_reason: 'dunning_exhausted' }, shows: ['Pro Team', 'canceled', 'November 22, 2026 at 3:15 PM GMT+7', 'dunning exhausted'] },
  subscription_paused: { data: { ...subscription, paused_at: '2026-11-20T09:00:00.000Z' }, shows: ['Pro Team', 'paused', 'November 20, 2026 at 4:00 PM GMT+7'] },
  subscription_resumed: { data: { ...subscription, next_billing_date: '2026-12-25T00:00:00.000Z' }, shows: ['Pro Team', 'active again', 'December 25, 2026'] },
  subscription_plan_changed: { data: { ...subscription, old_plan_name: 'Basic', amount: '66666.67', currency: 'IDR' }, shows: ['Basic', 'Pro Team', 'IDR 66,666.67'] },
  subscription_renewed: { data: subscription, shows: ['Pro Team', 'renewed', 'December 22, 2026'] },
  subscription_expired: { data: subscription, shows: ['Pro Team', 'ended'] },
  trial_will_end: { data: { ...subscription, trial_end: '2026-12-01T00:00:00.000Z', price: '150000.00', currency: 'IDR' }, shows: ['Pro Team', 'December 1, 2026', 'IDR 150,000'] },
  topup_succeeded: { data: { ...topup, balance_after: '1250000.00' }, shows: ['TOPUP-77', 'IDR 250,000', 'IDR 1,250,000'] },
  topup_failed: { data: topup, shows: ['TOPUP-77', 'IDR 250,000', 'did not go through'] },
  topup_expired: { data: topup, shows: ['TOPUP-77', 'IDR 250,000', 'expired'] },
  payment_credited_to_wallet: { data: { ...payment, reason: 'invoice_already_paid' }, shows: ['SUB-ORDER42', 'IDR 150,000', 'wallet'] },
  payment_reversed: { data: topup, shows: ['TOPUP-77', 'IDR 250,000', 'reversed'] },
  payment_charged_back: { data: { ...payment, chargeback_amount: '50000.00', fully_charged_back: false }, shows: ['IDR 50,000', 'chargeback', 'unchanged'] },
  card_expiring: { data: { plan_name: 'Pro', card_expires_at: '2027-03-01T00:00:00.000Z', next_billing_date: '2027-03-15T00:00:00.000Z' }, shows: ['Pro', 'expiring', 'March 1, 2027', 'March 15, 2027'] },
  payment_method_required: { data: { plan_name: 'Pro', order_id: 'SUB-1', reason: 'chargeback' }, shows: ['Pro', 'chargeback', 'new payment method', 'SUB-1'] },
};

describe('notification emails', () => {
  it('covers all 21 notification types', () => {
    expect(Object.keys(CASES)).toHaveLength(21);
  });

  it.each(Object.entries(CASES))('renders %s with a subject, a text and an HTML body that carry its key data', (type, { data, shows }) => {
    const email = renderNotificationEmail(type as NotificationType, data, 'Dewi', EN);
    expect(email.subject.trim()).not.toBe('');
    expect(email.subject).not.toMatch(/undefined|null|\[object/);
    expect(email.text).toMatch(/^Hello Dewi,/);
    expect(email.html).toMatch(/^<!doctype html>/);
    for (const value of shows) {
      expect(`${email.subject}\n${email.text}`.toLowerCase(), `text of ${type} shows ${value}`).toContain(value.toLowerCase());
      expect(email.html.toLowerCase(), `html of ${type} shows ${value}`).toContain(value.toLowerCase());
    }
    expect(email.text).not.toMatch(/undefined|\[object/);
    expect(email.html).not.toMatch(/undefined|\[object/);
  });

  it('gives each payment method its own instructions: bill key for echannel, a QR link for QRIS', () => {
    const echannel = renderNotificationEmail('payment_pending', { ...payment, payment_type: 'echannel', bank: 'mandiri', bill_key: '776655443322', biller_code: '70012' }, '', EN);
    expect(echannel.text).toContain('Biller code: 70012');
    expect(echannel.text).toContain('Bill key: 776655443322');
    expect(echannel.text).toContain('Mandiri bill payment');

    const qris = renderNotificationEmail('payment_pending', { ...payment, payment_type: 'qris', qr_code_url: 'https://pay.example/qr/abc?x=1&y=2' }, '', EN);
    expect(qris.text).toContain('Open the QR code: https://pay.example/qr/abc?x=1&y=2');
    expect(qris.html).toContain('<a href="https://pay.example/qr/abc?x=1&amp;y=2"');
  });

  it('tells a scheduled plan change apart from an immediate one, and shows a proration charge or credit', () => {
    const scheduled = renderNotificationEmail('subscription_plan_changed', { ...subscription, old_plan_name: 'Basic', scheduled: true }, '', EN);
    expect(scheduled.subject).toBe('Your plan will change from Basic to Pro Team at renewal');
    expect(scheduled.text).toContain('Changes on: December 22, 2026');
    const charged = renderNotificationEmail('subscription_plan_changed', { ...subscription, old_plan_name: 'Basic', proration: '33333.33' }, '', EN);
    expect(charged.text).toContain('Prorated charge: 33,333.33');
    const credited = renderNotificationEmail('subscription_plan_changed', { ...subscription, old_plan_name: 'Pro', plan_name: 'Basic', proration: '-16666.67' }, '', EN);
    expect(credited.text).toContain('Credited to your wallet: 16,666.67');
    expect(credited.text).not.toContain('Prorated charge');
  });

  it('escapes every data value in the HTML and never links a non-http URL', () => {
    const email = renderNotificationEmail(
      'payment_pending',
      { ...payment, order_id: '<script>alert("x")</script>', bank: '"><img src=x onerror=alert(1)>', va_number: "1'2&3", qr_code_url: 'javascript:alert(1)' },
      '<b>Eve</b>',
      EN,
    );
    expect(email.html).not.toContain('<script>');
    expect(email.html).not.toContain('<img');
    expect(email.html).not.toContain('<b>Eve</b>');
    expect(email.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;');
    expect(email.html).toContain('1&#39;2&amp;3');
    expect(email.html).not.toMatch(/href="javascript:/i);
    expect(email.text).toContain('<script>alert("x")</script>');
  });

  it('keeps the subject on one line whatever the data holds', () => {
    const email = renderNotificationEmail('subscription_activated', { plan_name: 'Pro\r\nBcc: victim@example.com' }, '', EN);
    expect(email.subject).not.toMatch(/[\r\n]/);
  });

  it('leaves out facts the event did not carry instead of printing empty values', () => {
    const email = renderNotificationEmail('subscription_activated', {}, '', EN);
    expect(email.subject).toBe('Your subscription is active');
    expect(email.text).not.toMatch(/Plan:|Current period ends:/);
  });

  it('writes the date of an event in the time zone: paid at 18:30 UTC on 31 March is 1 April in Jakarta, 31 March in New York', () => {
    const paid = { ...payment, payment_type: 'gopay', paid_at: '2026-03-31T18:30:00.000Z' };
    expect(renderNotificationEmail('payment_succeeded', paid, 'Dewi', EN).text).toContain('Paid on: April 1, 2026 at 1:30 AM GMT+7');
    expect(renderNotificationEmail('payment_succeeded', paid, 'Dewi', ID).text).toContain('Dibayar pada: 1 April 2026 pukul 01.30 WIB');
    expect(renderNotificationEmail('payment_succeeded', paid, 'Dewi', { locale: 'en-US', timeZone: 'America/New_York' }).text).toContain('Paid on: March 31, 2026 at 2:30 PM EDT');
  });
});

describe('notification emails in Bahasa Indonesia (BILLING_LOCALE=id-ID, the default)', () => {
  it.each(Object.entries(CASES))('renders %s in Bahasa with its key data, and no English word of the template', (type, { data }) => {
    const email = renderNotificationEmail(type as NotificationType, data, 'Dewi', ID);
    expect(email.text).toMatch(/^Halo Dewi,/);
    expect(email.text).toContain('Anda menerima email ini');
    expect(`${email.subject}\n${email.text}`).not.toMatch(/\b(your|the|was|has|Order|Amount|Plan|Hello)\b/);
    for (const value of [data.order_id, data.plan_name].filter(Boolean)) expect(email.text).toContain(String(value));
    expect(email.text).not.toMatch(/undefined|null|\[object/);
  });

  it('is the default, and reads as an Indonesian customer writes amounts and dates', () => {
    const email = renderNotificationEmail('payment_pending', CASES.payment_pending.data, 'Dewi');
    expect(email.subject).toBe('Petunjuk pembayaran pesanan SUB-ORDER42: Rp 150.000');
    expect(email.text).toContain('Transfer tepat Rp 150.000 ke nomor Virtual Account BNI di bawah ini.');
    expect(email.text).toContain('Nomor Virtual Account: 9881234567890');
    expect(email.text).toContain('Bayar sebelum: 23 November 2026 pukul 17.00 WIB');
    const echannel = renderNotificationEmail('payment_pending', { ...payment, payment_type: 'echannel', bank: 'mandiri', bill_key: '776655443322', biller_code: '70012' });
    expect(echannel.text).toContain('Kode perusahaan: 70012');
    expect(echannel.text).toContain('Kode bayar: 776655443322');
    const trial = renderNotificationEmail('trial_will_end', CASES.trial_will_end.data);
    expect(trial.subject).toBe('Masa uji coba Pro Team Anda berakhir pada 1 Desember 2026');
    expect(trial.text).toContain('Harga setelah masa uji coba: Rp 150.000');
  });
});
