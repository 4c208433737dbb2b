import { randomBytes } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import { Topup } from '../../db/entities/topup.js';
import { User } from '../../db/entities/user.js';
import { DomainError, ValidationError, type FieldError } from '../../domain/errors.js';
import { compare, parseAmountInput, type Money } from '../../domain/money.js';
import { topupStates } from '../../domain/states/topup-states.js';
import { GatewayError, gatewayErrorToProblemCode } from '../../gateway/errors.js';
import { BANKS, GATEWAY_PAYMENT_TYPES, type Bank, type GatewayPaymentType, type GatewayTransaction } from '../../gateway/types.js';
import type { DataContext, ServiceContext } from '../context.js';
import { notify } from '../notifications/notify.js';
import { topupData } from '../notifications/payloads.js';
import { TOPUP_ORDER_PREFIX } from '../payments/order-id.js';
import { eventFromTransaction } from '../gateway-events/gateway-event.js';
import { recordAndApplyGatewayEvent } from '../gateway-events/process-notification.js';
import { recordOrCancel } from '../gateway-events/cancel-unrecorded-order.js';

export interface CreateTopupInput {
  /** As sent: a JSON number or a decimal string, in the wallet currency. */
  amount: unknown;
  paymentType: string;
  /** bank_transfer only; default bca. */
  bank?: string;
  /** credit_card only, and required there. */
  token?: string;
}

interface CheckedTopup {
  amount: Money;
  paymentType: GatewayPaymentType;
  bank: Bank | null;
  token: string | null;
}

/**
 * A top-up amount as sent, in the wallet currency and within TOPUP_MIN_AMOUNT..TOPUP_MAX_AMOUNT;
 * null with the reasons added to `errors` (under `field`) otherwise. A hosted checkout's
 * `topup_amount` is held to the same bounds when its link is made.
 */
export function checkTopupAmount(ctx: DataContext, raw: unknown, field: string, errors: FieldError[]): Money | null {
  const currency = ctx.config.walletCurrency;
  let amount: Money;
  try {
    amount = parseAmountInput(raw, currency, field);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    errors.push(...err.errors);
    return null;
  }
  if (compare(amount, ctx.config.topupMinAmount) < 0) {
    errors.push({ field, message: `must be at least ${ctx.config.topupMinAmount} ${currency}` });
    return null;
  }
  if (compare(amount, ctx.config.topupMaxAmount) > 0) {
    errors.push({ field, message: `must be at most ${ctx.config.topupMaxAmount} ${currency}` });
    return null;
  }
  return amount;
}

function checkInput(ctx: DataContext, input: CreateTopupInput): CheckedTopup {
  const errors: FieldError[] = [];
  const amount = checkTopupAmount(ctx, input.amount, 'amount', errors);
  const paymentType = input.paymentType as GatewayPaymentType;
  if (!GATEWAY_PAYMENT_TYPES.includes(paymentType)) {
    errors.push({ field: 'payment_type', message: `must be one of: ${GATEWAY_PAYMENT_TYPES.join(', ')}` });
  }
  // NOTE: a field that does not apply to the payment type is refused rather than ignored, so a
  // client never believes it chose a bank or a card that plays no part.
  if (input.bank !== undefined && paymentType !== 'bank_transfer') {
    errors.push({ field: 'bank', message: 'applies to bank_transfer only' });
  } else if (input.bank !== undefined && !(BANKS as readonly string[]).includes(input.bank)) {
    errors.push({ field: 'bank', message: `must be one of: ${BANKS.join(', ')}` });
  }
  const token = typeof input.token === 'string' ? input.token.trim() : '';
  if (paymentType === 'credit_card' && token === '') errors.push({ field: 'token', message: 'is required for credit_card' });
  if (paymentType !== 'credit_card' && input.token !== undefined) errors.push({ field: 'token', message: 'applies to credit_card only' });
  if (errors.length > 0 || amount === null) throw new ValidationError(errors);
  return {
    amount,
    paymentType,
    bank: paymentType === 'bank_transfer' ? ((input.bank as Bank | undefined) ?? 'bca') : null,
    token: paymentType === 'credit_card' ? token : null,
  };
}

const ORDER_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `TOPUP-YYYYMMDD-` and ten random characters: 25 characters, well inside Midtrans' 50. */
function newOrderId(at: Date): string {
  const day = at.toISOString().slice(0, 10).replace(/-/g, '');
  const suffix = [...randomBytes(10)].map((b) => ORDER_ALPHABET[b % 32]).join('');
  return `${TOPUP_ORDER_PREFIX}${day}-${suffix}`;
}

/**
 * Starts a wallet top-up: records it `pending`, charges the gateway, and stores how to pay. A
 * card the gateway captures at once is applied on the spot (the wallet is credited; the later
 * webhook is a duplicate), a denied card fails it, and a pending one gets a `payment_pending`
 * notification with the payment instructions.
 */
export async function createTopup(ctx: ServiceContext, user: User, input: CreateTopupInput): Promise<Topup> {
  // The gateway is called between two commits, never inside a transaction.
  if (ctx.em.isInTransaction()) throw new Error('createTopup talks to the gateway and must not run inside a transaction');
  const checked = checkInput(ctx, input);
  const now = ctx.clock.now();
  const topup = ctx.em.create(Topup, {
    orderId: newOrderId(now),
    user: user.id,
    amount: checked.amount,
    currency: ctx.config.walletCurrency,
    status: 'pending',
    paymentType: checked.paymentType,
    bank: checked.bank,
    paymentDetails: {},
    createdAt: now,
  } as unknown as Topup);
  // Committed before the charge, so that a notification racing the charge's answer finds it.
  await ctx.em.flush();

  let answer: GatewayTransaction;
  try {
    answer = await ctx.gateway.charge({
      orderId: topup.orderId,
      grossAmount: topup.amount,
      currency: topup.currency,
      paymentType: checked.paymentType,
      bank: checked.bank ?? undefined,
      cardToken: checked.token ?? undefined,
      customer: { firstName: user.firstName || undefined, lastName: user.lastName || undefined, email: user.email ?? undefined, phone: user.phone ?? undefined },
      items: [{ id: 'wallet-topup', name: 'Wallet top-up', price: topup.amount, quantity: 1 }],
    });
  } catch (err) {
    throw await recordChargeFailure(ctx, topup, err);
  }
  // An answer that cannot be recorded (a full disk) is an error for the client: its order is
  // canceled at the gateway first, so that trying again never pays twice.
  await recordOrCancel(ctx, topup.orderId, async () => {
    await ctx.em.transactional(async (em) => {
      const t = await em.findOneOrFail(Topup, { id: topup.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      t.transactionId ??= answer.transactionId;
      t.paymentDetails = { ...answer.paymentDetails };
      t.expiresAt = answer.expiryTime;
      if (answer.transactionStatus === 'pending' && t.status === 'pending') {
        notify({ em, config: ctx.config, clock: ctx.clock }, await em.findOneOrFail(User, { id: user.id }), 'payment_pending', topupData(t));
      }
    });
    // The answer is applied like a notification and logged (source `charge`): a card captured at
    // once credits the wallet now, and the gateway's own notification of it is then a duplicate.
    await recordAndApplyGatewayEvent(ctx, { event: eventFromTransaction(answer), source: 'charge' });
  });
  return ctx.em.findOneOrFail(Topup, { id: topup.id }, { refresh: true });
}

/**
 * After a failed charge: when the gateway surely did not take it, the top-up is `failed`; when
 * it may have (a timeout, an unreadable answer), it stays `pending` with `outcomeUnknown` so
 * that reconciliation asks the gateway later. Returns the error to answer with.
 */
async function recordChargeFailure(ctx: ServiceContext, started: Topup, err: unknown): Promise<unknown> {
  const gatewayError = err instanceof GatewayError ? err : null;
  // GatewayError.outcomeUnknown is the one rule (timeouts, dropped connections, unreadable answers).
  const unknown = gatewayError === null || gatewayError.outcomeUnknown;
  const record = () => ctx.em.transactional(async (em) => {
    const t = await em.findOneOrFail(Topup, { id: started.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (unknown) t.outcomeUnknown = true;
    else if (topupStates.applyIfAllowed(t, 'fail', ctx.clock.now())) {
      await em.populate(t, ['user']);
      notify({ em, config: ctx.config, clock: ctx.clock }, t.user, 'topup_failed', { ...topupData(t), reason: gatewayError!.message });
    }
    return t;
  });
  // An order that may exist, and whose doubt cannot be recorded, is canceled (recordOrCancel).
  const topup = unknown ? await recordOrCancel(ctx, started.orderId, record) : await record();
  if (gatewayError === null) return err;
  const code = gatewayErrorToProblemCode(gatewayError);
  return unknown
    ? new DomainError(
        code,
        `The payment gateway's answer was lost (${gatewayError.message}). Top-up ${topup.orderId} stays pending and is settled when the gateway reports its outcome; do not pay twice.`,
      )
    : new DomainError(code, `The payment gateway refused the charge (${gatewayError.message}). Top-up ${topup.orderId} is marked failed; nothing was charged.`);
}
