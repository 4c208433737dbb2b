import { approvedCardStatus, cardOutcome, markCardCaptured, markCardDenied } from './charge.js';
import type { SimFraudStatus, SimStatus, SimTransaction } from './types.js';

export type Move = { ok: true } | { ok: false; reason: string };

const OK: Move = { ok: true };

function refuse(tx: SimTransaction, what: string): Move {
  const fraud = tx.fraud_status ? ` (fraud_status ${tx.fraud_status})` : '';
  return { ok: false, reason: `cannot ${what} a transaction in status ${tx.transaction_status}${fraud}` };
}

/** The only writer of transaction_status, so every change lands in the history. */
export function setStatus(tx: SimTransaction, status: SimStatus, fraud: SimFraudStatus | null, now: Date): void {
  tx.transaction_status = status;
  tx.fraud_status = fraud;
  tx.history.push({ transaction_status: status, fraud_status: fraud, at: now });
}

const isChallenged = (tx: SimTransaction): boolean => tx.transaction_status === 'capture' && tx.fraud_status === 'challenge';

/**
 * The gateway's transaction states (docs/gateway.md, 'Wire details'). Each move checks the
 * current state and mutates the record; callers decide how a refusal is reported (412 on the
 * Core API, 409 on commands).
 */
export const moves = {
  settle(tx: SimTransaction, now: Date): Move {
    const fromCapture = tx.transaction_status === 'capture' && tx.fraud_status === 'accept';
    if (tx.transaction_status !== 'pending' && !fromCapture) return refuse(tx, 'settle');
    if (tx.card && tx.transaction_status === 'pending') markCardCaptured(tx.card, now);
    tx.settlement_time = now;
    setStatus(tx, 'settlement', 'accept', now);
    return OK;
  },

  capture(tx: SimTransaction, now: Date, fraud: 'accept' | 'challenge'): Move {
    if (tx.card === null) return { ok: false, reason: `capture applies to credit_card, not ${tx.payment_type}` };
    if (tx.transaction_status === 'authorize') return moves.captureAuthorization(tx, now, null);
    if (tx.transaction_status === 'pending') {
      markCardCaptured(tx.card, now);
      // The customer passed 3-D Secure: a pre-authorisation is then held, not captured.
      if (approvedCardStatus(tx.card) === 'authorize') setStatus(tx, 'authorize', 'accept', now);
      else setStatus(tx, 'capture', fraud, now);
      return OK;
    }
    // Accepting a challenged capture is what the merchant's approve call does.
    if (isChallenged(tx) && fraud === 'accept') return moves.approve(tx, now);
    return refuse(tx, 'capture');
  },

  /**
   * The customer finishes the 3-D Secure page: failed authentication denies; a passed one
   * gives what the card token decides (sim-card-deny, sim-card-challenge, else accept).
   */
  authenticate(tx: SimTransaction, now: Date, passed: boolean): Move {
    if (tx.card === null || tx.card.redirect_url === null || tx.transaction_status !== 'pending') return refuse(tx, 'authenticate');
    const outcome = passed ? cardOutcome(tx.card.token_id) : 'deny';
    if (outcome === 'deny') {
      markCardDenied(tx.card);
      setStatus(tx, 'deny', 'accept', now);
      return OK;
    }
    markCardCaptured(tx.card, now);
    if (approvedCardStatus(tx.card) === 'authorize') setStatus(tx, 'authorize', 'accept', now);
    else setStatus(tx, 'capture', outcome, now);
    return OK;
  },

  /**
   * The merchant captures a pre-authorisation (POST /v2/capture): the held amount, or less, is
   * charged and settles like any capture. Only an `authorize` can be captured.
   */
  captureAuthorization(tx: SimTransaction, now: Date, amount: number | null): Move {
    if (tx.transaction_status !== 'authorize') return refuse(tx, 'capture');
    if (amount !== null && (amount < 1 || amount > tx.gross_amount)) return { ok: false, reason: `cannot capture ${amount} of an authorisation of ${tx.gross_amount}` };
    if (amount !== null) tx.gross_amount = amount;
    setStatus(tx, 'capture', 'accept', now);
    return OK;
  },

  approve(tx: SimTransaction, now: Date): Move {
    if (!isChallenged(tx)) return refuse(tx, 'approve');
    setStatus(tx, 'capture', 'accept', now);
    return OK;
  },

  /** The merchant's deny of a challenged card capture (POST /v2/:id/deny). */
  denyChallenge(tx: SimTransaction, now: Date): Move {
    if (!isChallenged(tx)) return refuse(tx, 'deny');
    if (tx.card) markCardDenied(tx.card);
    setStatus(tx, 'deny', 'deny', now);
    return OK;
  },

  /** A denial from the provider: pending, challenged, or a rare reversal of a Permata/Mandiri settlement. */
  deny(tx: SimTransaction, now: Date): Move {
    if (isChallenged(tx)) return moves.denyChallenge(tx, now);
    const reversal = tx.transaction_status === 'settlement' && tx.refunds.length === 0 && (tx.bank === 'permata' || tx.payment_type === 'echannel');
    if (tx.transaction_status !== 'pending' && !reversal) return refuse(tx, 'deny');
    if (tx.card) markCardDenied(tx.card);
    setStatus(tx, 'deny', tx.fraud_status ?? 'accept', now);
    return OK;
  },

  /**
   * The daily card settlement batch: an accepted capture settles; a challenge nobody approved
   * or denied is cancelled (docs/gateway.md, 'How the simulator behaves').
   */
  settleBatch(tx: SimTransaction, now: Date): Move {
    if (tx.transaction_status !== 'capture') return refuse(tx, 'settle');
    if (tx.fraud_status === 'challenge') return moves.cancel(tx, now);
    return moves.settle(tx, now);
  },

  /** Voids what moved no money yet: a pending order, a capture before settlement, a pre-authorisation (its hold is released). */
  cancel(tx: SimTransaction, now: Date): Move {
    if (tx.transaction_status !== 'pending' && tx.transaction_status !== 'capture' && tx.transaction_status !== 'authorize') return refuse(tx, 'cancel');
    setStatus(tx, 'cancel', tx.fraud_status, now);
    return OK;
  },

  expire(tx: SimTransaction, now: Date): Move {
    if (tx.transaction_status !== 'pending') return refuse(tx, 'expire');
    setStatus(tx, 'expire', tx.fraud_status, now);
    return OK;
  },
};

/** A pending transaction past its expiry_time expires the next time anyone looks at it. */
export function isDueToExpire(tx: SimTransaction, now: Date): boolean {
  return tx.transaction_status === 'pending' && tx.expiry_time !== null && tx.expiry_time.getTime() <= now.getTime();
}

const GMT7_MS = 7 * 3_600_000;
const DAY_MS = 86_400_000;
/** Midtrans settles card captures at about 16:00 GMT+7 the day after. */
const SETTLEMENT_HOUR_GMT7 = 16;

/** When a card capture made at `capturedAt` settles: 16:00 GMT+7 on the next calendar day there. */
export function cardSettlementDue(capturedAt: Date): Date {
  const localDay = Math.floor((capturedAt.getTime() + GMT7_MS) / DAY_MS);
  return new Date((localDay + 1) * DAY_MS + SETTLEMENT_HOUR_GMT7 * 3_600_000 - GMT7_MS);
}

/** The time the transaction entered its current capture state, or null when it is not a capture. */
export function capturedAt(tx: SimTransaction): Date | null {
  if (tx.transaction_status !== 'capture') return null;
  const first = tx.history.find((h) => h.transaction_status === 'capture');
  return first?.at ?? tx.transaction_time;
}

export function isDueToSettle(tx: SimTransaction, now: Date): boolean {
  const at = capturedAt(tx);
  return at !== null && cardSettlementDue(at).getTime() <= now.getTime();
}
