import type { Payment, PaymentStatus } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import { GatewayError } from '../../gateway/errors.js';
import type { ServiceContext } from '../context.js';
import { findOwnPayment } from './find-payment.js';

export interface PaymentStatusCheck {
  local_status: PaymentStatus;
  gateway_status: Record<string, unknown> & { transaction_status: string; status_code: string };
}

/**
 * The payment's local status beside the gateway's status answer, verbatim. Read-only. A
 * payment the gateway has no transaction for (a wallet payment, or a charge that never reached
 * it) is reported as `transaction_status: not_found` with the gateway's 404.
 */
export async function checkPaymentStatus(ctx: ServiceContext, user: User, id: string): Promise<PaymentStatusCheck> {
  return paymentStatusCheck(ctx, await findOwnPayment(ctx.em.fork(), user, id));
}

/** checkPaymentStatus of a payment already found (support staff find any user's). */
export async function paymentStatusCheck(ctx: Pick<ServiceContext, 'gateway'>, payment: Payment): Promise<PaymentStatusCheck> {
  const notFound = (message: string): PaymentStatusCheck => ({
    local_status: payment.status,
    gateway_status: { status_code: '404', transaction_status: 'not_found', status_message: message, order_id: payment.orderId },
  });
  if (payment.paymentType === 'wallet') return notFound('Paid from the wallet; the gateway has no transaction for this payment.');
  try {
    const tx = await ctx.gateway.status(payment.orderId);
    return {
      local_status: payment.status,
      gateway_status: { transaction_status: tx.transactionStatus, status_code: tx.statusCode, ...tx.raw },
    };
  } catch (err) {
    if (err instanceof GatewayError && err.kind === 'not_found') return notFound(err.messages[0] ?? "Transaction doesn't exist.");
    throw err;
  }
}
