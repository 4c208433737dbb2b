/*
 * The wallet references of the debits that take back what the gateway took back: the only
 * debits that may take a wallet below zero (verify-wallets.ts). Each is this prefix and the
 * payment's or top-up's id (and, where one payment can be taken back in steps, the total).
 */

/** A reversed or fully charged-back payment's wallet credit, or a reversed top-up (reverse-payment.ts). */
export const REVERSAL_REFERENCE = 'reversal:';
/** A charged-back top-up, one entry per charged-back total (apply-chargeback.ts). */
export const TOPUP_CHARGEBACK_REFERENCE = 'chargeback:';
/** What a refund made at the gateway paid out that the payment's wallet credit had already given (apply-refund.ts). */
export const REFUND_OVERLAP_REFERENCE = 'refund-excess:';
/** The same for a partial chargeback (apply-chargeback.ts). */
export const CHARGEBACK_OVERLAP_REFERENCE = 'chargeback-excess:';

export const TAKE_BACK_REFERENCES = [REVERSAL_REFERENCE, TOPUP_CHARGEBACK_REFERENCE, REFUND_OVERLAP_REFERENCE, CHARGEBACK_OVERLAP_REFERENCE] as const;
