// The payment-gateway port the billing services depend on. MidtransClient is the only
// production implementation; tests may substitute their own.

export const GATEWAY_PAYMENT_TYPES = ['bank_transfer', 'echannel', 'gopay', 'qris', 'shopeepay', 'credit_card'] as const;
export type GatewayPaymentType = (typeof GATEWAY_PAYMENT_TYPES)[number];

export const BANKS = ['bca', 'bni', 'bri', 'cimb', 'permata'] as const;
export type Bank = (typeof BANKS)[number];

export interface ChargeRequest {
  /** At most 50 characters of [A-Za-z0-9_~.-]. */
  orderId: string;
  /** Decimal string from our database, e.g. "150000.00"; IDR must have no fractional part. */
  grossAmount: string;
  currency: string;
  paymentType: GatewayPaymentType;
  /** bank_transfer only; default 'bca'. */
  bank?: Bank;
  /** credit_card: a one-time token or a saved_token_id. */
  cardToken?: string;
  /** credit_card: ask the gateway for a reusable saved_token_id. */
  saveCard?: boolean;
  /** credit_card recurring charge made without the customer present. */
  merchantInitiated?: boolean;
  /**
   * credit_card: a pre-authorisation (credit_card.type "authorize"): the amount is held on the
   * card, no money moves until a capture, and a cancel releases the hold.
   */
  authorizeOnly?: boolean;
  customer?: { firstName?: string; lastName?: string; email?: string; phone?: string };
  /** Prices are decimal strings; Σ price × quantity must equal grossAmount. */
  items?: { id: string; name: string; price: string; quantity: number }[];
  /** Sent as X-Override-Notification: notifications for this transaction go only there. */
  notificationUrl?: string;
  /** custom_expiry in minutes from the transaction time. */
  expiryMinutes?: number;
  metadata?: Record<string, unknown>;
  /** shopeepay: where the wallet app sends the customer back to. */
  callbackUrl?: string;
  /** Sent as Idempotency-Key (at most 46 characters; Midtrans replays a success for 5 minutes). */
  idempotencyKey?: string;
}

export interface PaymentDetails {
  bank?: string;
  va_number?: string;
  bill_key?: string;
  biller_code?: string;
  qr_code_url?: string;
  deeplink_url?: string;
  redirect_url?: string;
  masked_card?: string;
  /** ISO 8601 UTC. */
  expiry_time?: string | null;
}

/** A charge, status, cancel or expire answer, normalised. */
export interface GatewayTransaction {
  orderId: string;
  transactionId: string | null;
  /** Lower-cased (a few channels answer "PENDING"). */
  transactionStatus: string;
  fraudStatus: string | null;
  statusCode: string;
  /** Verbatim from the gateway, e.g. "150000.00"; needed as-is for signatures. */
  grossAmount: string | null;
  paymentType: string | null;
  paymentDetails: PaymentDetails;
  expiryTime: Date | null;
  savedTokenId: string | null;
  /** Cumulative refunded amount, verbatim. */
  refundAmount: string | null;
  signatureKey: string | null;
  raw: Record<string, unknown>;
}

export interface RefundRequest {
  orderId: string;
  /** Idempotency key of this refund at Midtrans: [A-Za-z0-9_-]. */
  refundKey: string;
  /** Decimal string; IDR must have no fractional part. */
  amount: string;
  reason?: string;
}

export interface RefundResult {
  refundKey: string;
  /** The amount of this refund as the gateway reported it, verbatim. */
  refundAmount: string;
  transactionStatus: string;
  statusCode: string;
  /** False when the bank rejected a direct refund (status_code 202); nothing was refunded. */
  accepted: boolean;
  raw: Record<string, unknown>;
}

export interface PaymentGateway {
  charge(req: ChargeRequest): Promise<GatewayTransaction>;
  /** Unknown order → GatewayError kind not_found; an expired transaction (407) is a normal answer. */
  status(orderId: string): Promise<GatewayTransaction>;
  cancel(orderId: string): Promise<GatewayTransaction>;
  expire(orderId: string): Promise<GatewayTransaction>;
  refund(req: RefundRequest): Promise<RefundResult>;
  directRefund(req: RefundRequest): Promise<RefundResult>;
}
