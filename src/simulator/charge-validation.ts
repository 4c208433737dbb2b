import { parseRequestTime } from './time.js';
import { SIM_BANKS, type SimBank, type SimPaymentType } from './types.js';

const ORDER_ID = /^[A-Za-z0-9_~.-]+$/;
const UNIT_SECONDS = { second: 1, minute: 60, hour: 3600, day: 86_400 } as const;
const DAY = 86_400;
/** Longest custom_expiry per method, as Midtrans documents it. */
const MAX_EXPIRY_SECONDS: Record<SimPaymentType, number> = {
  bank_transfer: 180 * DAY,
  echannel: 180 * DAY,
  gopay: 7 * DAY,
  qris: 7 * DAY,
  shopeepay: 5 * DAY,
  credit_card: 180 * DAY,
};

export interface ValidCharge {
  payment_type: SimPaymentType;
  order_id: string;
  gross_amount: number;
  bank: SimBank | null;
  custom_va_number: string | null;
  custom_bill_key: string | null;
  /** authorize_only: credit_card.type "authorize", a pre-authorisation that holds the amount and moves no money. */
  card: { token_id: string | null; save_token_id: boolean; authentication: boolean; initiated_by: 'customer' | 'merchant'; authorize_only: boolean } | null;
  acquirer: string;
  callback_url: string | null;
  expiry: { order_time: Date | null; seconds: number } | null;
  custom_fields: Record<string, string>;
  metadata: Record<string, unknown> | null;
  customer_details: Record<string, unknown> | null;
  item_details: Record<string, unknown>[] | null;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** JSON integers; a digit string is accepted too, as several client libraries send one. */
function integer(v: unknown): number | null {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return v;
  if (typeof v === 'string' && /^-?\d{1,15}$/.test(v)) return Number(v);
  return null;
}

export type ChargeValidation = { ok: true; value: ValidCharge } | { ok: false; messages: string[] };

/** Checks a /v2/charge body the way Midtrans does; every problem is reported, not just the first. */
export function validateCharge(raw: unknown): ChargeValidation {
  const errors: string[] = [];
  if (!isObj(raw)) return { ok: false, messages: ['Request body must be a JSON object'] };

  let paymentType = raw['payment_type'];
  let bank: SimBank | null = null;
  // The older integration guide charges Permata VA as its own payment_type.
  if (paymentType === 'permata') {
    paymentType = 'bank_transfer';
    bank = 'permata';
  }
  const knownTypes = Object.keys(MAX_EXPIRY_SECONDS);
  if (typeof paymentType !== 'string' || paymentType === '') errors.push('payment_type is required');
  else if (!knownTypes.includes(paymentType)) errors.push(`payment_type ${paymentType} is not supported`);
  const type = (knownTypes.includes(paymentType as string) ? paymentType : null) as SimPaymentType | null;

  const details = raw['transaction_details'];
  let orderId = '';
  let gross = 0;
  if (!isObj(details)) {
    errors.push('transaction_details is required');
  } else {
    const id = details['order_id'];
    if (typeof id !== 'string' || id === '') errors.push('transaction_details.order_id is required');
    else if (id.length > 50) errors.push('transaction_details.order_id too long, max 50 characters');
    else if (!ORDER_ID.test(id)) errors.push('transaction_details.order_id contains invalid characters');
    else orderId = id;
    const amount = integer(details['gross_amount']);
    if (details['gross_amount'] === undefined) errors.push('transaction_details.gross_amount is required');
    else if (amount === null || amount < 1) errors.push('transaction_details.gross_amount is not valid');
    else gross = amount;
  }

  let items: Obj[] | null = null;
  if (raw['item_details'] !== undefined && raw['item_details'] !== null) {
    const list = raw['item_details'];
    if (!Array.isArray(list)) {
      errors.push('item_details must be an array');
    } else {
      let sum = 0;
      let itemsOk = true;
      list.forEach((item, i) => {
        if (!isObj(item)) {
          errors.push(`item_details[${i}] must be an object`);
          itemsOk = false;
          return;
        }
        const price = integer(item['price']);
        const qty = integer(item['quantity']);
        if (price === null) errors.push(`item_details[${i}].price is not valid`);
        if (qty === null || qty < 1) errors.push(`item_details[${i}].quantity is not valid`);
        if (typeof item['name'] !== 'string' || item['name'] === '') errors.push(`item_details[${i}].name is required`);
        if (price === null || qty === null || qty < 1) itemsOk = false;
        else sum += price * qty;
      });
      if (itemsOk && gross > 0 && sum !== gross) {
        errors.push('transaction_details.gross_amount is not equal to the sum of item_details');
      }
      items = list.filter(isObj);
    }
  }

  let customVa: string | null = null;
  if (type === 'bank_transfer' && bank === null) {
    const bt = raw['bank_transfer'];
    if (!isObj(bt)) errors.push('bank_transfer is required');
    else if (typeof bt['bank'] !== 'string' || !(SIM_BANKS as readonly string[]).includes(bt['bank'])) {
      errors.push(`bank_transfer.bank must be one of ${SIM_BANKS.join(', ')}`);
    } else bank = bt['bank'] as SimBank;
  }
  if (type === 'bank_transfer') {
    const bt = raw['bank_transfer'];
    const va = isObj(bt) ? bt['va_number'] : undefined;
    if (va !== undefined && va !== null && va !== '') {
      if (typeof va !== 'string' || !/^\d+$/.test(va)) errors.push('bank_transfer.va_number must be numeric');
      else customVa = va;
    }
  }

  let customBillKey: string | null = null;
  if (type === 'echannel') {
    const ec = raw['echannel'];
    if (!isObj(ec)) errors.push('echannel is required');
    else {
      if (typeof ec['bill_info1'] !== 'string' || ec['bill_info1'] === '') errors.push('echannel.bill_info1 is required');
      if (typeof ec['bill_info2'] !== 'string' || ec['bill_info2'] === '') errors.push('echannel.bill_info2 is required');
      if (ec['bill_key'] !== undefined) {
        if (typeof ec['bill_key'] !== 'string' || !/^\d{1,12}$/.test(ec['bill_key'])) errors.push('echannel.bill_key must be up to 12 digits');
        else customBillKey = ec['bill_key'];
      }
    }
  }

  let callbackUrl: string | null = null;
  if (type === 'shopeepay') {
    const sp = raw['shopeepay'];
    if (!isObj(sp)) errors.push('shopeepay is required');
    else if (typeof sp['callback_url'] === 'string') callbackUrl = sp['callback_url'];
  }
  if (type === 'gopay' && isObj(raw['gopay']) && typeof raw['gopay']['callback_url'] === 'string') {
    callbackUrl = raw['gopay']['callback_url'];
  }
  let acquirer = 'gopay';
  if (type === 'qris' && isObj(raw['qris']) && raw['qris']['acquirer'] !== undefined) {
    const a = raw['qris']['acquirer'];
    if (a !== 'gopay' && a !== 'airpay shopee') errors.push('qris.acquirer must be gopay or airpay shopee');
    else acquirer = a;
  }

  let card: ValidCharge['card'] = null;
  if (type === 'credit_card') {
    const cc = isObj(raw['credit_card']) ? raw['credit_card'] : {};
    const token = cc['token_id'];
    card = {
      token_id: typeof token === 'string' && token.trim() !== '' ? token : null,
      save_token_id: cc['save_token_id'] === true,
      authentication: cc['authentication'] === true,
      initiated_by: cc['initiated_by'] === 'merchant' ? 'merchant' : 'customer',
      authorize_only: cc['type'] === 'authorize',
    };
    if (cc['type'] !== undefined && cc['type'] !== 'authorize' && cc['type'] !== 'authorize_capture') {
      errors.push('credit_card.type must be authorize or authorize_capture');
    }
    if (cc['initiated_by'] !== undefined && cc['initiated_by'] !== 'merchant' && cc['initiated_by'] !== 'customer') {
      errors.push('credit_card.initiated_by must be customer or merchant');
    }
  }

  let expiry: ValidCharge['expiry'] = null;
  const ce = raw['custom_expiry'];
  if (ce !== undefined && ce !== null) {
    if (!isObj(ce)) errors.push('custom_expiry must be an object');
    else {
      const duration = integer(ce['expiry_duration']);
      const unit = ce['unit'] ?? 'minute';
      let orderTime: Date | null = null;
      if (ce['order_time'] !== undefined) {
        orderTime = typeof ce['order_time'] === 'string' ? parseRequestTime(ce['order_time']) : null;
        if (orderTime === null) errors.push('custom_expiry.order_time must be "YYYY-MM-DD HH:mm:ss +0700"');
      }
      if (duration === null || duration < 1) errors.push('custom_expiry.expiry_duration is not valid');
      else if (typeof unit !== 'string' || !(unit in UNIT_SECONDS)) errors.push('custom_expiry.unit is not valid');
      else {
        const seconds = duration * UNIT_SECONDS[unit as keyof typeof UNIT_SECONDS];
        if (type !== null && seconds > MAX_EXPIRY_SECONDS[type]) errors.push('custom_expiry exceeds the maximum for this payment type');
        else expiry = { order_time: orderTime, seconds };
      }
    }
  }

  const customFields: Record<string, string> = {};
  for (const key of ['custom_field1', 'custom_field2', 'custom_field3']) {
    const v = raw[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v.length > 255) errors.push(`${key} must be a string of at most 255 characters`);
    else customFields[key] = v;
  }
  const metadata = raw['metadata'];
  if (metadata !== undefined && metadata !== null && !isObj(metadata)) errors.push('metadata must be an object');
  const customer = raw['customer_details'];
  if (customer !== undefined && customer !== null && !isObj(customer)) errors.push('customer_details must be an object');

  if (errors.length > 0 || type === null) return { ok: false, messages: errors };
  return {
    ok: true,
    value: {
      payment_type: type,
      order_id: orderId,
      gross_amount: gross,
      bank,
      custom_va_number: customVa,
      custom_bill_key: customBillKey,
      card,
      acquirer,
      callback_url: callbackUrl,
      expiry,
      custom_fields: customFields,
      metadata: isObj(metadata) ? metadata : null,
      customer_details: isObj(customer) ? customer : null,
      item_details: items,
    },
  };
}
