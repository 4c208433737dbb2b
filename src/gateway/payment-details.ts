import { parseMidtransTime } from './midtrans-time.js';
import type { PaymentDetails } from './types.js';

type Body = Record<string, unknown>;

function str(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function actionUrl(body: Body, name: string): string | undefined {
  const actions = body['actions'];
  if (!Array.isArray(actions)) return undefined;
  for (const a of actions) {
    if (a !== null && typeof a === 'object' && (a as Body)['name'] === name) return str((a as Body)['url']);
  }
  return undefined;
}

/** The QRIS charge sample says expire_time where every other one says expiry_time. */
export function readExpiryTime(body: Body): Date | null {
  return parseMidtransTime(body['expiry_time']) ?? parseMidtransTime(body['expire_time']);
}

function vaNumber(body: Body): { bank?: string; va_number?: string } {
  const vas = body['va_numbers'];
  if (Array.isArray(vas) && vas.length > 0 && vas[0] !== null && typeof vas[0] === 'object') {
    const first = vas[0] as Body;
    return { bank: str(first['bank']), va_number: str(first['va_number']) };
  }
  const permata = str(body['permata_va_number']);
  if (permata !== undefined) return { bank: 'permata', va_number: permata };
  return {};
}

function compact(details: PaymentDetails): PaymentDetails {
  return Object.fromEntries(Object.entries(details).filter(([, v]) => v !== undefined)) as PaymentDetails;
}

/**
 * The customer-facing payment instructions of a charge or status answer, in the shapes the
 * API publishes as payment_details (openapi.yaml, PaymentDetails).
 */
export function extractPaymentDetails(body: Body): PaymentDetails {
  const expiry = readExpiryTime(body);
  const expiry_time = expiry === null ? null : expiry.toISOString();
  switch (body['payment_type']) {
    case 'bank_transfer':
    case 'permata':
      return compact({ ...vaNumber(body), expiry_time });
    case 'echannel':
      return compact({ bank: 'mandiri', bill_key: str(body['bill_key']), biller_code: str(body['biller_code']), expiry_time });
    case 'gopay':
    case 'qris':
      return compact({
        qr_code_url: actionUrl(body, 'generate-qr-code'),
        deeplink_url: actionUrl(body, 'deeplink-redirect'),
        expiry_time,
      });
    case 'shopeepay':
      return compact({ deeplink_url: actionUrl(body, 'deeplink-redirect'), expiry_time });
    case 'credit_card':
      return compact({ redirect_url: str(body['redirect_url']), masked_card: str(body['masked_card']) });
    default:
      return compact({ expiry_time });
  }
}
