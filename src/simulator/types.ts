export const SIM_PAYMENT_TYPES = ['bank_transfer', 'echannel', 'gopay', 'qris', 'shopeepay', 'credit_card'] as const;
export type SimPaymentType = (typeof SIM_PAYMENT_TYPES)[number];

export const SIM_BANKS = ['bca', 'bni', 'bri', 'cimb', 'permata'] as const;
export type SimBank = (typeof SIM_BANKS)[number];

export type SimStatus =
  | 'pending'
  | 'authorize'
  | 'capture'
  | 'settlement'
  | 'deny'
  | 'cancel'
  | 'expire'
  | 'refund'
  | 'partial_refund'
  | 'chargeback'
  | 'partial_chargeback';
export type SimFraudStatus = 'accept' | 'challenge' | 'deny';

export interface SimAction {
  name: string;
  method: 'GET' | 'POST';
  url: string;
}

export interface SimCard {
  token_id: string;
  masked_card: string;
  card_type: 'credit' | 'debit';
  bank: string;
  approval_code: string | null;
  eci: string;
  channel_response_code: string;
  channel_response_message: string;
  three_ds_version: string;
  on_us: boolean;
  redirect_url: string | null;
  saved_token_id: string | null;
  saved_token_id_expired_at: Date | null;
  initiated_by: 'customer' | 'merchant';
  /** save_token_id was asked for; a pending 3-D Secure charge gets its saved token on capture. */
  save_token_requested: boolean;
  /** credit_card.authentication was asked for (3-D Secure). */
  authentication: boolean;
  /** credit_card.type "authorize": a good card ends `authorize` (amount held, no money moved) until captured or canceled. */
  authorize_only: boolean;
}

export interface SimRefund {
  refund_chargeback_id: number;
  refund_chargeback_uuid: string;
  /** Integer IDR. */
  refund_amount: number;
  created_at: Date;
  reason: string;
  refund_key: string;
  refund_method: 'online';
  /** null until the bank confirms; Midtrans notifies once before and once after. */
  bank_confirmed_at: Date | null;
  /** Made through /refund/online/direct. */
  direct: boolean;
}

/**
 * A cardholder's dispute the issuer won (docs/gateway.md, 'Chargebacks'). Kept apart from the
 * refunds, which the merchant made: a refund's totals and limits stay the refunds' own.
 */
export interface SimChargeback {
  /** Midtrans numbers refunds and chargebacks in one sequence per transaction. */
  refund_chargeback_id: number;
  refund_chargeback_uuid: string;
  /** Integer IDR. */
  chargeback_amount: number;
  created_at: Date;
  /** Free text, as the issuer or Midtrans writes it (e.g. "Cardholder disputes the transaction"); never a code to match on. */
  reason: string;
}

/** The simulator's own record of one transaction; exposed as-is by GET /_simulator/transactions/:id. */
export interface SimTransaction {
  transaction_id: string;
  order_id: string;
  merchant_id: string;
  payment_type: SimPaymentType;
  /** Integer IDR. */
  gross_amount: number;
  currency: 'IDR';
  transaction_status: SimStatus;
  fraud_status: SimFraudStatus | null;
  status_message: string;
  transaction_time: Date;
  settlement_time: Date | null;
  expiry_time: Date | null;
  bank: SimBank | null;
  va_number: string | null;
  bill_key: string | null;
  biller_code: string | null;
  qr_string: string | null;
  acquirer: string | null;
  actions: SimAction[];
  card: SimCard | null;
  refunds: SimRefund[];
  chargebacks: SimChargeback[];
  /** X-Override-Notification: when set, notifications go only here. */
  override_notification_urls: string[] | null;
  /** X-Append-Notification: in addition to the default URL. */
  append_notification_urls: string[];
  custom_fields: Record<string, string>;
  metadata: Record<string, unknown> | null;
  customer_details: Record<string, unknown> | null;
  item_details: Record<string, unknown>[] | null;
  history: { transaction_status: SimStatus; fraud_status: SimFraudStatus | null; at: Date }[];
}

export const COMMAND_ACTIONS = ['settle', 'capture', 'deny', 'cancel', 'expire', 'pending', 'refund', 'chargeback', 'partial_chargeback'] as const;
export type CommandAction = (typeof COMMAND_ACTIONS)[number];

export interface ActionOptions {
  /**
   * settle: the customer paid this fee on top (Automatic Fee Imposition): from
   * then on gross_amount includes it and metadata.extra_info.gross_amount_info says so.
   */
  customerFee?: number;
  /** false: move the record and send no notification, as when the merchant's endpoint was down and the retries ran out. */
  notify?: boolean;
  /** capture: accept (default) or challenge. */
  fraudStatus?: 'accept' | 'challenge';
  /**
   * refund, chargeback, partial_chargeback: integer IDR (number or digit string). A refund or a
   * chargeback takes the whole remaining amount when absent; a partial chargeback requires it.
   */
  amount?: number | string;
  /** chargeback, partial_chargeback: the dispute's free-text reason (default "Cardholder disputes the transaction"). */
  reason?: string;
}

export interface DeliveryOutcome {
  url: string;
  http_status: number | null;
  error: string | null;
  /** The notification was held by the simulator's proxy (POST /_simulator/notifications/hold), not sent yet. */
  held?: true;
}

export interface ActionResult {
  order_id: string;
  transaction_status: SimStatus;
  /** The first delivery attempt to the first notification URL; null when told not to notify (a lost notification). */
  notification: DeliveryOutcome | null;
}

export const CORE_OPERATIONS = ['charge', 'status', 'cancel', 'expire', 'refund', 'direct_refund', 'approve', 'deny', 'capture'] as const;
export type CoreOperation = (typeof CORE_OPERATIONS)[number];

/**
 * `refuse` is the gateway saying no to the request itself (a 4xx-class status_code: nothing was
 * done, whatever `when` says); the others lose or spoil the answer.
 */
export const FAULT_MODES = ['none', 'http_500', 'timeout', 'malformed', 'redirect', 'refuse'] as const;
export type FaultMode = (typeof FAULT_MODES)[number];

/**
 * before: the call fails before the gateway does anything (nothing changes).
 * after: the gateway does the operation (state, notifications, Idempotency-Key) and then the
 * answer is lost: held open (timeout), replaced by garbage, a 500 or a 302.
 */
export const FAULT_TIMINGS = ['before', 'after'] as const;
export type FaultTiming = (typeof FAULT_TIMINGS)[number];

export interface Fault {
  mode: FaultMode;
  /** Default before. */
  when?: FaultTiming;
  /** How many matching Core API calls are affected; unlimited when absent. */
  count?: number;
  /** Which Core API operations; all when absent. */
  operations?: CoreOperation[];
  /**
   * False: the notification of what the call did is lost as well (the merchant's endpoint was
   * down through every retry), so only a status query finds it. Default true.
   */
  notify?: boolean;
}

/** Raised by act() and the command routes; the HTTP status is what the command route answers. */
export class SimulatorError extends Error {
  constructor(
    readonly httpStatus: 400 | 404 | 409,
    message: string,
  ) {
    super(message);
    this.name = 'SimulatorError';
  }
}
