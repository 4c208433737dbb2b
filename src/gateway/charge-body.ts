import { toGatewayInteger, toJsonInteger } from './amount.js';
import { GatewayError, type GatewayOperation } from './errors.js';
import { BANKS, GATEWAY_PAYMENT_TYPES, type ChargeRequest } from './types.js';

export const ORDER_ID_PATTERN = /^[A-Za-z0-9_~.-]{1,50}$/;

function invalid(message: string, operation: GatewayOperation = 'charge'): GatewayError {
  return new GatewayError('validation', message, { operation, messages: [message] });
}

/** Also guards the path segment of status/cancel/expire/refund URLs. */
export function assertOrderId(orderId: unknown, operation: GatewayOperation = 'charge'): asserts orderId is string {
  if (typeof orderId !== 'string' || !ORDER_ID_PATTERN.test(orderId)) {
    throw invalid(`orderId must be 1-50 characters of letters, digits, '-', '_', '~' or '.'`, operation);
  }
}

function customerDetails(c: NonNullable<ChargeRequest['customer']>): Record<string, string> {
  const out: Record<string, string> = {};
  if (c.firstName) out['first_name'] = c.firstName;
  if (c.lastName) out['last_name'] = c.lastName;
  if (c.email) out['email'] = c.email;
  if (c.phone) out['phone'] = c.phone;
  return out;
}

function itemDetails(req: ChargeRequest, gross: bigint): Record<string, unknown>[] | undefined {
  if (req.items === undefined || req.items.length === 0) return undefined;
  let sum = 0n;
  const items = req.items.map((item, i) => {
    if (!Number.isSafeInteger(item.quantity) || item.quantity < 1) throw invalid(`items[${i}].quantity must be a positive integer`);
    if (typeof item.name !== 'string' || item.name === '') throw invalid(`items[${i}].name is required`);
    const price = toGatewayInteger(item.price, req.currency, `items[${i}].price`);
    sum += price * BigInt(item.quantity);
    return { id: item.id, name: item.name, price: toJsonInteger(price, `items[${i}].price`), quantity: item.quantity };
  });
  // Midtrans rejects the charge when the items do not add up; failing here names the cause.
  if (sum !== gross) throw invalid(`items add up to ${sum}, not to grossAmount ${gross}`);
  return items;
}

function methodFields(req: ChargeRequest): Record<string, unknown> {
  switch (req.paymentType) {
    case 'bank_transfer': {
      const bank = req.bank ?? 'bca';
      if (!(BANKS as readonly string[]).includes(bank)) throw invalid(`bank must be one of ${BANKS.join(', ')}`);
      return { bank_transfer: { bank } };
    }
    case 'echannel':
      return { echannel: { bill_info1: 'Payment', bill_info2: 'Subscription' } };
    case 'gopay':
      return { gopay: { enable_callback: false } };
    case 'qris':
      return { qris: { acquirer: 'gopay' } };
    case 'shopeepay':
      return { shopeepay: req.callbackUrl ? { callback_url: req.callbackUrl } : {} };
    case 'credit_card': {
      if (typeof req.cardToken !== 'string' || req.cardToken.trim() === '') throw invalid('cardToken is required for credit_card');
      const card: Record<string, unknown> = {
        token_id: req.cardToken,
        // A merchant-initiated renewal has no customer present to pass 3-D Secure.
        authentication: !req.merchantInitiated,
        save_token_id: req.saveCard === true,
        initiated_by: req.merchantInitiated ? 'merchant' : 'customer',
      };
      if (req.authorizeOnly) card['type'] = 'authorize';
      return { credit_card: card };
    }
    default:
      throw invalid(`paymentType must be one of ${GATEWAY_PAYMENT_TYPES.join(', ')}`);
  }
}

/** The /v2/charge body for a request, validated before anything is sent. */
export function buildChargeBody(req: ChargeRequest): Record<string, unknown> {
  assertOrderId(req.orderId);
  if (!(GATEWAY_PAYMENT_TYPES as readonly string[]).includes(req.paymentType)) {
    throw invalid(`paymentType must be one of ${GATEWAY_PAYMENT_TYPES.join(', ')}`);
  }
  const gross = toGatewayInteger(req.grossAmount, req.currency, 'grossAmount');
  if (gross <= 0n) throw invalid('grossAmount must be positive');
  const body: Record<string, unknown> = {
    payment_type: req.paymentType,
    transaction_details: { order_id: req.orderId, gross_amount: toJsonInteger(gross, 'grossAmount') },
  };
  const items = itemDetails(req, gross);
  if (items) body['item_details'] = items;
  if (req.customer) {
    const customer = customerDetails(req.customer);
    if (Object.keys(customer).length > 0) body['customer_details'] = customer;
  }
  if (req.expiryMinutes !== undefined) {
    if (!Number.isSafeInteger(req.expiryMinutes) || req.expiryMinutes < 1) throw invalid('expiryMinutes must be a positive integer');
    body['custom_expiry'] = { expiry_duration: req.expiryMinutes, unit: 'minute' };
  }
  if (req.metadata !== undefined) body['metadata'] = req.metadata;
  Object.assign(body, methodFields(req));
  return body;
}
