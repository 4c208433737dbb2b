/*
 * The shape of a gateway event, apart from the code that reads one (gateway-event.ts): the
 * reading of a message's place in history (natural-order.ts) takes the shape without the reader.
 */

/**
 * What the gateway said happened to one order, from a webhook payload, a status query (sync)
 * or a charge answer. Strings are kept exactly as received.
 */
export interface GatewayEvent {
  orderId: string;
  transactionStatus: string;
  fraudStatus: string | null;
  statusCode: string | null;
  grossAmount: string | null;
  transactionId: string | null;
  paymentType: string | null;
  /** Cumulative refunded amount after this event (refund notifications); the cumulative charged-back amount in chargeback ones (docs/gateway.md). */
  refundAmount: string | null;
  /**
   * The entries of `refunds[]` as the gateway lists them. Midtrans lists refunds and chargebacks
   * there alike (`refund_chargeback_id` numbers both, `reason` is free text): what an entry is
   * follows from the message's status, never from the entry (natural-order.ts, docs/gateway.md).
   */
  refunds: GatewayEntry[];
  raw: Record<string, unknown>;

  /**
   * True when the payload came from our own authenticated call to the gateway (a charge or
   * status answer), so fields the notification signature does not cover (saved_token_id) can be
   * believed.
   */
  verified?: boolean;
}

/** One entry of `refunds[]`. */
export interface GatewayEntry {
  refundKey: string | null;
  amount: string;
  /** refund_chargeback_id: the gateway's sequence over the order's refunds and chargebacks. */
  id?: number | null;
  createdAt?: string | null;
  /** The entry's free text (`reason`): why the issuer took the money back, for a chargeback. */
  reason?: string | null;
}
