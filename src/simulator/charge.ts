import type { ValidCharge } from './charge-validation.js';
import { newId, randomDigits, randomToken } from './random.js';
import type { SimBank, SimCard, SimPaymentType, SimTransaction } from './types.js';

export const MERCHANT_ID = 'G000000001';
const MINUTE = 60_000;
/** Default pending lifetimes, as Midtrans documents them; card = the 3-D Secure page's validity. */
const DEFAULT_EXPIRY_MS: Record<SimPaymentType, number> = {
  bank_transfer: 24 * 60 * MINUTE,
  echannel: 24 * 60 * MINUTE,
  gopay: 15 * MINUTE,
  qris: 15 * MINUTE,
  shopeepay: 15 * MINUTE,
  credit_card: 10 * MINUTE,
};

/** Company prefix + customer part; customer-part lengths as Midtrans documents them per bank. */
const VA_LAYOUT: Record<SimBank, { prefix: string; digits: number }> = {
  bca: { prefix: '12345', digits: 6 },
  bni: { prefix: '9880', digits: 12 },
  bri: { prefix: '', digits: 18 },
  cimb: { prefix: '1899', digits: 12 },
  permata: { prefix: '8562', digits: 12 },
};

function vaNumber(bank: SimBank, custom: string | null): string {
  const { prefix, digits } = VA_LAYOUT[bank];
  if (custom === null) return prefix + randomDigits(digits);
  // BCA takes 6-18 digits as given; the others pad short numbers with zeros and cut long ones.
  if (bank === 'bca' && custom.length >= 6 && custom.length <= 18) return prefix + custom;
  const width = bank === 'bca' ? (custom.length < 6 ? 6 : 18) : digits;
  return prefix + (custom.length > width ? custom.slice(0, width) : custom.padStart(width, '0'));
}

export type CardOutcome = 'accept' | 'challenge' | 'deny';

/** What the issuer and the fraud check decide: test-card tokens pick it, any other card is accepted. */
export function cardOutcome(token: string): CardOutcome {
  if (token.startsWith('sim-card-challenge')) return 'challenge';
  if (token.startsWith('sim-card-deny')) return 'deny';
  return 'accept';
}

const isTestToken = (token: string): boolean => /^sim-card-(accept|challenge|deny)/.test(token);

/**
 * How the simulator treats credit_card.authentication (3-D Secure):
 * - when_asked (Midtrans): every charge that asks for it waits on the 3-D Secure page; the token
 *   picks the outcome once the customer authenticates there. No 3-D Secure when not asked.
 * - test_tokens_skip (the historical simulator, the default): sim-card-* tokens decide at once
 *   even when 3-D Secure is asked; other tokens wait on the page when it is asked.
 */
export const THREE_DS_MODES = ['when_asked', 'test_tokens_skip'] as const;
export type ThreeDsMode = (typeof THREE_DS_MODES)[number];

export function needsThreeDs(card: NonNullable<ValidCharge['card']>, token: string, mode: ThreeDsMode): boolean {
  if (!card.authentication) return false;
  return mode === 'when_asked' || !isTestToken(token);
}

export const SAVED_TOKEN_PREFIX = 'sim-card-accept-saved-';

/** Saved tokens are made to start with sim-card-accept so renewals charged with them capture at once. */
export function issueSavedToken(card: SimCard, now: Date): void {
  if (!card.save_token_requested || card.saved_token_id !== null) return;
  card.saved_token_id = card.token_id.startsWith(SAVED_TOKEN_PREFIX) ? card.token_id : SAVED_TOKEN_PREFIX + randomToken();
  const expires = new Date(now);
  expires.setUTCFullYear(expires.getUTCFullYear() + 3);
  card.saved_token_id_expired_at = expires;
}

export function markCardCaptured(card: SimCard, now: Date): void {
  card.approval_code = randomDigits(13);
  card.eci = '05';
  card.channel_response_code = '00';
  card.channel_response_message = 'Approved';
  issueSavedToken(card, now);
}

export function markCardDenied(card: SimCard): void {
  card.approval_code = null;
  card.channel_response_code = '05';
  card.channel_response_message = 'Do not honor';
}

function newCard(v: NonNullable<ValidCharge['card']>, token: string, redirectUrl: string): SimCard {
  return {
    token_id: token,
    masked_card: '48111111-1114',
    card_type: 'credit',
    bank: 'bni',
    approval_code: null,
    eci: '',
    channel_response_code: '',
    channel_response_message: '',
    three_ds_version: '2',
    on_us: false,
    redirect_url: redirectUrl,
    saved_token_id: null,
    saved_token_id_expired_at: null,
    initiated_by: v.initiated_by,
    save_token_requested: v.save_token_id,
    authentication: v.authentication,
    authorize_only: v.authorize_only,
  };
}

const PENDING_MESSAGES: Record<Exclude<SimPaymentType, 'credit_card'>, string> = {
  bank_transfer: 'Success, Bank Transfer transaction is created',
  echannel: 'OK, Mandiri Bill transaction is successful',
  gopay: 'GO-PAY transaction is created',
  qris: 'QRIS transaction is created',
  shopeepay: 'ShopeePay transaction is created',
};

export interface CreateContext {
  now: Date;
  publicBaseUrl: string;
  threeDsMode: ThreeDsMode;
  overrideUrls: string[] | null;
  appendUrls: string[];
}

/** A new transaction for a validated charge whose card token (if any) is present. */
export function createTransaction(v: ValidCharge, ctx: CreateContext): SimTransaction {
  const id = newId();
  const base = `${ctx.publicBaseUrl.replace(/\/+$/, '')}/_simulator`;
  const tx: SimTransaction = {
    transaction_id: id,
    order_id: v.order_id,
    merchant_id: MERCHANT_ID,
    payment_type: v.payment_type,
    gross_amount: v.gross_amount,
    currency: 'IDR',
    transaction_status: 'pending',
    fraud_status: 'accept',
    status_message: '',
    transaction_time: ctx.now,
    settlement_time: null,
    expiry_time: null,
    bank: null,
    va_number: null,
    bill_key: null,
    biller_code: null,
    qr_string: null,
    acquirer: null,
    actions: [],
    card: null,
    refunds: [],
    chargebacks: [],
    override_notification_urls: ctx.overrideUrls,
    append_notification_urls: ctx.appendUrls,
    custom_fields: v.custom_fields,
    metadata: v.metadata,
    customer_details: v.customer_details,
    item_details: v.item_details,
    history: [],
  };
  const start = v.expiry?.order_time ?? ctx.now;
  const lifetime = v.expiry ? v.expiry.seconds * 1000 : DEFAULT_EXPIRY_MS[v.payment_type];
  tx.expiry_time = new Date(start.getTime() + lifetime);

  switch (v.payment_type) {
    case 'bank_transfer': {
      const bank = v.bank ?? 'bca';
      tx.bank = bank;
      tx.va_number = vaNumber(bank, v.custom_va_number);
      tx.status_message = bank === 'permata' ? 'Success, PERMATA VA transaction is successful' : PENDING_MESSAGES.bank_transfer;
      break;
    }
    case 'echannel':
      tx.bill_key = v.custom_bill_key ?? randomDigits(12);
      tx.biller_code = '70012';
      tx.status_message = PENDING_MESSAGES.echannel;
      break;
    case 'gopay':
      tx.actions = [
        { name: 'generate-qr-code', method: 'GET', url: `${base}/v2/gopay/${id}/qr-code` },
        { name: 'deeplink-redirect', method: 'GET', url: gopayDeeplink(id, v) },
        { name: 'get-status', method: 'GET', url: `${base}/v2/${id}/status` },
        { name: 'cancel', method: 'POST', url: `${base}/v2/${id}/cancel` },
      ];
      tx.status_message = PENDING_MESSAGES.gopay;
      break;
    case 'qris':
      tx.acquirer = v.acquirer;
      tx.qr_string = qrString(id, v.gross_amount);
      tx.actions = [{ name: 'generate-qr-code', method: 'GET', url: `${base}/v2/qris/${id}/qr-code` }];
      tx.status_message = PENDING_MESSAGES.qris;
      break;
    case 'shopeepay':
      tx.actions = [
        { name: 'deeplink-redirect', method: 'GET', url: `https://wsa.uat.wallet.airpay.co.id/universal-link/wallet/pay?deep_and_deferred=1&token=${Buffer.from(id).toString('base64url')}` },
      ];
      tx.status_message = PENDING_MESSAGES.shopeepay;
      break;
    case 'credit_card':
      applyCardOutcome(tx, v, `${base}/3ds/${id}`, ctx);
      break;
  }
  tx.history.push({ transaction_status: tx.transaction_status, fraud_status: tx.fraud_status, at: ctx.now });
  return tx;
}

function applyCardOutcome(tx: SimTransaction, v: ValidCharge, redirectUrl: string, ctx: CreateContext): void {
  const token = v.card?.token_id ?? '';
  const card = newCard(v.card!, token, redirectUrl);
  tx.card = card;
  if (needsThreeDs(v.card!, token, ctx.threeDsMode)) {
    tx.status_message = 'Success, Credit Card transaction is successful';
    return;
  }
  card.redirect_url = null;
  // The 3-D Secure page's validity is the only expiry a card charge has.
  tx.expiry_time = null;
  settleCardOutcome(tx, cardOutcome(token), ctx.now);
}

/** The charge's result once the card is known good or bad (at once, or after 3-D Secure). */
export function settleCardOutcome(tx: SimTransaction, outcome: CardOutcome, now: Date): void {
  const card = tx.card!;
  if (outcome === 'deny') {
    markCardDenied(card);
    tx.transaction_status = 'deny';
    tx.fraud_status = 'accept';
    tx.status_message = 'Deny by Bank [BNI] with code [05] and message [Do not honor]';
    return;
  }
  markCardCaptured(card, now);
  if (card.authorize_only) {
    // A pre-authorisation holds the amount on the card and moves no money; the simulator's fraud
    // check does not challenge one (a challenge token is authorised like any good card).
    tx.transaction_status = 'authorize';
    tx.fraud_status = 'accept';
    tx.status_message = 'Success, Credit Card transaction is successful';
    return;
  }
  tx.transaction_status = 'capture';
  tx.fraud_status = outcome === 'challenge' ? 'challenge' : 'accept';
  tx.status_message = outcome === 'challenge' ? 'Challenge by FDS' : 'Success, Credit Card transaction is successful';
}

/** The status a good card reaches after 3-D Secure: `authorize` for a pre-authorisation, else `capture`. */
export function approvedCardStatus(card: SimCard): 'authorize' | 'capture' {
  return card.authorize_only ? 'authorize' : 'capture';
}

function gopayDeeplink(id: string, v: ValidCharge): string {
  const callback = v.callback_url ? `&callback_url=${encodeURIComponent(`${v.callback_url}?order_id=${v.order_id}`)}` : '';
  return `gojek://gopay/merchanttransfer?tref=${id}&amount=${v.gross_amount}&activity=GP:RR${callback}`;
}

/** Looks like an EMVCo payload; not scannable, which is fine for a simulator. */
function qrString(id: string, amount: number): string {
  const value = String(amount);
  const amountField = `54${String(value.length).padStart(2, '0')}${value}`;
  return `00020101021226620014COM.GO-JEK.WWW01189360091400000000010210${id.slice(0, 8)}520458125303360${amountField}5802ID5909SIMULATOR6007JAKARTA6304ABCD`;
}
