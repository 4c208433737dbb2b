import type { EntityManager } from '@mikro-orm/knex';
import { Payment } from '../../db/entities/payment.js';
import type { User } from '../../db/entities/user.js';
import { NotFoundError } from '../../domain/errors.js';

/** Relations the payment's wire shape needs. */
export const PAYMENT_POPULATE = ['subscription', 'invoice'] as const;

/** One of the user's payments; another user's is not found. */
export async function findOwnPayment(em: EntityManager, user: User, id: string): Promise<Payment> {
  const payment = await em.findOne(Payment, { id, user: user.id }, { populate: PAYMENT_POPULATE });
  if (!payment) throw new NotFoundError('Payment');
  return payment;
}

/** The payment as the API shows it, read fresh after the use case's transactions committed. */
export async function loadPayment(em: EntityManager, id: string): Promise<Payment> {
  return em.fork().findOneOrFail(Payment, id, { populate: PAYMENT_POPULATE });
}
