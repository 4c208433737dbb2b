import { createHash } from 'node:crypto';
import { chargedBackAmount, isChargedBack } from './chargebacks.js';
import { newId, stableDigits } from './random.js';
import { refundedAmount } from './refunds.js';
import { formatGmt7 } from './time.js';
import type { SimTransaction } from './types.js';

export type Body = Record<string, unknown>;
type Purpose = 'charge' | 'status' | 'notification';

/** Midtrans always reports amounts as "<integer>.00". */
export function money(n: number): string {
  return `${n}.00`;
}

// Written out here rather than imported from the gateway client so that a mistake in one of
// the two shows up as a failed contract test instead of agreeing with itself.
export function sign(orderId: string, statusCode: string, grossAmount: string, serverKey: string): string {
  return createHash('sha512').update(`${orderId}${statusCode}${grossAmount}${serverKey}`, 'utf8').digest('hex');
}

function isPaid(tx: SimTransaction): boolean {
  return tx.settlement_time !== null;
}

/** status_code of a notification for the transaction's state (docs/gateway.md, 'Wire details'). */
export function lifecycleStatusCode(tx: SimTransaction): string {
  switch (tx.transaction_status) {
    case 'settlement':
    // 'authorize' carries 200 like an accepted capture: the card was approved, nothing is pending.
    case 'authorize':
    case 'refund':
    case 'partial_refund':
    // Not in Midtrans' documented samples: money moved as the status says, like a refund.
    case 'chargeback':
    case 'partial_chargeback':
      return '200';
    case 'capture':
      return tx.fraud_status === 'challenge' ? '201' : '200';
    case 'pending':
      return '201';
    default:
      return '202';
  }
}

function baseFields(tx: SimTransaction): Body {
  const body: Body = {
    transaction_id: tx.transaction_id,
    order_id: tx.order_id,
    merchant_id: tx.merchant_id,
    gross_amount: money(tx.gross_amount),
    currency: tx.currency,
    payment_type: tx.payment_type,
    transaction_time: formatGmt7(tx.transaction_time),
    transaction_status: tx.transaction_status,
  };
  if (tx.fraud_status !== null) body['fraud_status'] = tx.fraud_status;
  if (tx.expiry_time !== null) body['expiry_time'] = formatGmt7(tx.expiry_time);
  if (tx.settlement_time !== null) body['settlement_time'] = formatGmt7(tx.settlement_time);
  return body;
}

function bankFields(tx: SimTransaction, purpose: Purpose): Body {
  if (tx.bank === 'permata') return { permata_va_number: tx.va_number };
  const body: Body = { va_numbers: [{ bank: tx.bank, va_number: tx.va_number }] };
  if (purpose !== 'charge') {
    body['payment_amounts'] =
      tx.settlement_time === null ? [] : [{ paid_at: formatGmt7(tx.settlement_time), amount: money(tx.gross_amount) }];
  }
  return body;
}

function cardFields(tx: SimTransaction, purpose: Purpose): Body {
  const card = tx.card;
  if (card === null) return {};
  const body: Body = {
    masked_card: card.masked_card,
    card_type: card.card_type,
    bank: card.bank,
    eci: card.eci,
    channel_response_code: card.channel_response_code,
    channel_response_message: card.channel_response_message,
    three_ds_version: card.three_ds_version,
    on_us: card.on_us,
  };
  if (card.approval_code !== null) body['approval_code'] = card.approval_code;
  if (card.saved_token_id !== null) {
    body['saved_token_id'] = card.saved_token_id;
    if (card.saved_token_id_expired_at !== null) body['saved_token_id_expired_at'] = formatGmt7(card.saved_token_id_expired_at);
  }
  if (purpose === 'charge' && tx.transaction_status === 'pending' && card.redirect_url !== null) body['redirect_url'] = card.redirect_url;
  return body;
}

function typeFields(tx: SimTransaction, purpose: Purpose): Body {
  switch (tx.payment_type) {
    case 'bank_transfer':
      return bankFields(tx, purpose);
    case 'echannel':
      return { bill_key: tx.bill_key, biller_code: tx.biller_code };
    case 'gopay':
      if (purpose === 'charge') return { actions: tx.actions };
      return isPaid(tx) ? { payment_option_type: 'GOPAY_WALLET' } : {};
    case 'qris': {
      if (purpose === 'charge') return { actions: tx.actions, qr_string: tx.qr_string, acquirer: tx.acquirer };
      const body: Body = { acquirer: tx.acquirer };
      if (isPaid(tx)) {
        body['transaction_type'] = 'on-us';
        body['issuer'] = tx.acquirer;
        body['merchant_cross_reference_id'] = tx.transaction_id;
      }
      return body;
    }
    case 'shopeepay': {
      if (purpose === 'charge') return { actions: tx.actions, channel_response_code: '0', channel_response_message: 'success' };
      const body: Body = {};
      // Status answers list actions only for a pending ShopeePay.
      if (purpose === 'status' && tx.transaction_status === 'pending') body['actions'] = tx.actions;
      if (isPaid(tx)) {
        body['shopeepay_reference_number'] = stableDigits(tx.transaction_id, 18);
        body['reference_id'] = `DL-${stableDigits(tx.order_id + tx.transaction_id, 20)}`;
      }
      return body;
    }
    case 'credit_card':
      return cardFields(tx, purpose);
  }
}

/**
 * refunds[] lists refunds and chargebacks together, as Midtrans does: one sequence of
 * refund_chargeback_id, a free-text reason, no field saying which is which (only the status
 * does; docs/gateway.md, "Chargebacks"). refund_amount is the total of the kind the status
 * names: what was charged back once a chargeback is the status, else what was refunded.
 */
function refundFields(tx: SimTransaction): Body {
  if (tx.refunds.length === 0 && tx.chargebacks.length === 0) return {};
  const chargebacks: Body[] = tx.chargebacks.map((c) => ({
    refund_chargeback_id: c.refund_chargeback_id,
    refund_chargeback_uuid: c.refund_chargeback_uuid,
    refund_amount: money(c.chargeback_amount),
    created_at: formatGmt7(c.created_at),
    reason: c.reason,
  }));
  return {
    refund_amount: money(isChargedBack(tx) ? chargedBackAmount(tx) : refundedAmount(tx)),
    refunds: [
      ...tx.refunds.map((r) => {
        const shown: Body = {
          refund_chargeback_id: r.refund_chargeback_id,
          refund_chargeback_uuid: r.refund_chargeback_uuid,
          refund_amount: money(r.refund_amount),
          created_at: formatGmt7(r.created_at),
          reason: r.reason,
          refund_key: r.refund_key,
          refund_method: r.refund_method,
        };
        // Absent until the bank confirms: the first of the two refund notifications has none.
        if (r.bank_confirmed_at !== null) shown['bank_confirmed_at'] = formatGmt7(r.bank_confirmed_at);
        return shown;
      }),
      ...chargebacks,
    ],
  };
}

function echoFields(tx: SimTransaction): Body {
  const body: Body = { ...tx.custom_fields };
  if (tx.metadata !== null) body['metadata'] = tx.metadata;
  return body;
}

/** The answer to POST /v2/charge for a transaction that was created. */
export function chargeAnswer(tx: SimTransaction): Body {
  return {
    status_code: lifecycleStatusCode(tx),
    status_message: tx.status_message,
    ...baseFields(tx),
    ...typeFields(tx, 'charge'),
    ...echoFields(tx),
  };
}

/** GET status: the notification field set, signed with its own status_code. */
export function statusAnswer(tx: SimTransaction, serverKey: string): Body {
  const statusCode = tx.transaction_status === 'expire' ? '407' : lifecycleStatusCode(tx);
  const body: Body = {
    status_code: statusCode,
    status_message: tx.transaction_status === 'expire' ? 'Transaction is expired' : 'Success, transaction is found',
    ...baseFields(tx),
    ...typeFields(tx, 'status'),
    ...refundFields(tx),
    ...echoFields(tx),
  };
  body['signature_key'] = sign(tx.order_id, statusCode, money(tx.gross_amount), serverKey);
  return body;
}

/** Answers of cancel/expire/approve/deny: the usual fields under the action's own status. */
export function actionAnswer(tx: SimTransaction, statusCode: string, statusMessage: string): Body {
  return {
    status_code: statusCode,
    status_message: statusMessage,
    ...baseFields(tx),
    ...typeFields(tx, 'status'),
    ...refundFields(tx),
    ...echoFields(tx),
  };
}

/** The HTTP notification body, signed as the gateway signs it (src/gateway/signature.ts). */
export function notificationPayload(tx: SimTransaction, serverKey: string): Body {
  const statusCode = lifecycleStatusCode(tx);
  const gross = money(tx.gross_amount);
  return {
    ...typeFields(tx, 'notification'),
    ...baseFields(tx),
    status_message: 'midtrans payment notification',
    status_code: statusCode,
    signature_key: sign(tx.order_id, statusCode, gross, serverKey),
    ...refundFields(tx),
    ...echoFields(tx),
  };
}

export function errorBody(statusCode: string, statusMessage: string, extra: Body = {}): Body {
  return { status_code: statusCode, status_message: statusMessage, id: newId(), ...extra };
}
