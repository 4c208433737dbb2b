import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { Invoice } from '../../src/db/entities/invoice.js';
import { Payment } from '../../src/db/entities/payment.js';
import { Plan } from '../../src/db/entities/plan.js';
import { Subscription } from '../../src/db/entities/subscription.js';
import { Topup } from '../../src/db/entities/topup.js';
import { User } from '../../src/db/entities/user.js';
import { startSubscription } from '../../src/domain/states/subscription-states.js';
import { computeSignature } from '../../src/gateway/signature.js';

/*
 * Rows made directly through the ORM, so tests of the webhook do not depend on the
 * subscription and top-up endpoints. Each factory takes overrides and flushes.
 */

const suffix = (n = 6) => randomBytes(n).toString('hex').toUpperCase();

export async function makeUser(em: EntityManager, overrides: Partial<User> = {}): Promise<User> {
  const username = overrides.username ?? `u_${suffix(4).toLowerCase()}`;
  const user = em.create(User, {
    username,
    email: `${username}@example.com`,
    // Not a usable hash: these users never log in.
    passwordHash: 'factory:no-login',
    isStaff: false,
    firstName: 'Test',
    lastName: 'User',
    phone: null,
    ...overrides,
  } as User);
  await em.flush();
  return user;
}

export async function makePlan(em: EntityManager, overrides: Partial<Plan> = {}): Promise<Plan> {
  const slug = overrides.slug ?? `plan-${suffix(4).toLowerCase()}`;
  const plan = em.create(Plan, {
    name: `Plan ${slug}`,
    slug,
    description: '',
    price: '150000.00',
    currency: 'IDR',
    interval: 1,
    intervalUnit: 'month',
    trialPeriodDays: 0,
    maxCycles: 0,
    status: 'active',
    features: {},
    sortOrder: 0,
    ...overrides,
  } as Plan);
  await em.flush();
  return plan;
}

export interface SubscriptionWithPayment {
  user: User;
  plan: Plan;
  subscription: Subscription;
  invoice: Invoice;
  payment: Payment;
}

/**
 * A new subscription (pending) with its first invoice (open) and first payment (pending), as
 * POST /subscriptions/ leaves them.
 */
export async function makeSubscriptionWithPayment(
  em: EntityManager,
  overrides: { user?: User; plan?: Plan; subscription?: Partial<Subscription>; invoice?: Partial<Invoice>; payment?: Partial<Payment> } = {},
): Promise<SubscriptionWithPayment> {
  const user = overrides.user ?? (await makeUser(em));
  const plan = overrides.plan ?? (await makePlan(em));
  const paymentType = overrides.payment?.paymentType ?? overrides.subscription?.paymentType ?? 'bank_transfer';
  const subscription = em.create(Subscription, {
    user,
    plan,
    paymentType,
    bank: paymentType === 'bank_transfer' ? 'bca' : null,
    metadata: {},
    customerDetails: {},
    cyclesCompleted: 0,
    cancelAtPeriodEnd: false,
  } as unknown as Subscription);
  startSubscription(subscription, 'pending');
  Object.assign(subscription, overrides.subscription ?? {});
  const today = new Date().toISOString().slice(0, 10);
  const invoice = em.create(Invoice, {
    number: `INV-T-${suffix(8)}`,
    user,
    subscription,
    status: 'open',
    billingReason: 'subscription_create',
    currency: plan.currency,
    issueDate: today,
    dueDate: today,
    subtotal: plan.price,
    totalAmount: plan.price,
    amountRefunded: '0.00',
    ...overrides.invoice,
  } as unknown as Invoice);
  const payment = em.create(Payment, {
    orderId: `SUB-${suffix(8)}`,
    user,
    subscription,
    invoice,
    status: 'pending',
    paymentType,
    grossAmount: invoice.totalAmount,
    currency: plan.currency,
    refundedAmount: '0.00',
    paymentDetails: {},
    outcomeUnknown: false,
    ...overrides.payment,
  } as unknown as Payment);
  await em.flush();
  return { user, plan, subscription, invoice, payment };
}

export async function makeTopup(em: EntityManager, overrides: Partial<Topup> & { user?: User } = {}): Promise<Topup> {
  const user = overrides.user ?? (await makeUser(em));
  const topup = em.create(Topup, {
    orderId: `TOPUP-${suffix(8)}`,
    user,
    amount: '100000.00',
    currency: 'IDR',
    status: 'pending',
    paymentType: 'bank_transfer',
    bank: 'bca',
    paymentDetails: {},
    outcomeUnknown: false,
    ...overrides,
  } as unknown as Topup);
  await em.flush();
  return topup;
}

/** The status_code Midtrans sends with each transaction_status (docs/gateway.md, 'Wire details'). */
export function statusCodeFor(transactionStatus: string, fraudStatus?: string): string {
  if (transactionStatus === 'capture') return fraudStatus === 'challenge' ? '201' : '200';
  if (transactionStatus === 'pending') return '201';
  if (['deny', 'cancel', 'expire', 'failure'].includes(transactionStatus)) return '202';
  return '200';
}

/** A notification body as the gateway sends it, signed with `serverKey`. */
export function signedNotification(
  serverKey: string,
  fields: { order_id: string; transaction_status: string; gross_amount: string; fraud_status?: string; status_code?: string } & Record<string, unknown>,
): Record<string, unknown> {
  const statusCode = fields.status_code ?? statusCodeFor(fields.transaction_status, fields.fraud_status);
  return {
    transaction_time: '2026-01-15 10:12:45',
    transaction_id: `tx-${fields.order_id}`,
    status_message: 'midtrans payment notification',
    payment_type: 'bank_transfer',
    merchant_id: 'G000000001',
    currency: 'IDR',
    ...fields,
    status_code: statusCode,
    signature_key: computeSignature(fields.order_id, statusCode, fields.gross_amount, serverKey),
  };
}
