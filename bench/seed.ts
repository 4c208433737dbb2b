/**
 * Prepares a benchmark database: plans, a user with an active subscription and a page of
 * settled payments (for the authenticated reads), and many pending subscription orders, each
 * with its own user, invoice and payment, for webhook settlements.
 */
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../src/config.js';
import { Invoice, InvoiceLine, Payment, Plan, Subscription, User } from '../src/db/entities/index.js';
import { migrateUp, openOrm, type Orm } from '../src/db/orm.js';
import { systemClock } from '../src/domain/clock.js';
import { computeSignature } from '../src/gateway/signature.js';
import { seedPlans } from '../src/services/plans/seed-plans.js';
import { hashPassword } from '../src/services/users/passwords.js';

export interface BenchFixtures {
  username: string;
  password: string;
  benchUserId: string;
  webhookBodies: string[];
  /** The user who floods PDF requests (same password), and the ids of their invoices. */
  pdfUsername: string;
  pdfInvoiceIds: string[];
}

const PRICE = '150000.00';

async function inChunks<T>(orm: Orm, items: T[], size: number, write: (em: Orm['em'], item: T) => void): Promise<void> {
  for (let i = 0; i < items.length; i += size) {
    const em = orm.em.fork();
    for (const item of items.slice(i, i + size)) write(em, item);
    await em.flush();
  }
}

export async function seedBench(databaseUrl: string, opts: { webhookOrders: number; serverKey: string; pdfInvoices?: number }): Promise<BenchFixtures> {
  const orm = await openOrm(databaseUrl, { create: true });
  try {
    await migrateUp(orm);
    await orm.em.getConnection().execute('create table bench_inserts (id varchar(36) primary key, payload text not null, created_at ' + (databaseUrl.startsWith('sqlite:') ? 'integer' : 'timestamptz') + ' not null)');
    const config = loadConfig({ DATABASE_URL: databaseUrl, SESSION_SECRET: 'bench' });
    await seedPlans({ em: orm.em.fork(), config, clock: systemClock }, Array.from({ length: 10 }, (_, i) => ({
      slug: `plan-${i + 1}`,
      name: `Plan ${i + 1}`,
      description: `Benchmark plan number ${i + 1}`,
      price: 50000 + i * 25000,
      currency: 'IDR',
      interval: 1,
      interval_unit: 'month' as const,
      sort_order: i,
      features: { seats: i + 1 },
    })));

    const em = orm.em.fork();
    const plan = await em.findOneOrFail(Plan, { slug: 'plan-5' });
    const password = 'bench-password-123';
    const user = em.create(User, { username: 'bench', passwordHash: await hashPassword(password), email: 'bench@example.com' } as User);
    const now = new Date();
    const periodEnd = new Date(now.getTime() + 30 * 86_400_000);
    const sub = em.create(Subscription, {
      user, plan, status: 'active', liveUserId: user.id, paymentType: 'bank_transfer', bank: 'bca',
      currentPeriodStart: now, currentPeriodEnd: periodEnd, nextBillingDate: periodEnd, billingAnchor: now, cyclesCompleted: 1, metadata: {}, customerDetails: {},
    } as unknown as Subscription);
    await em.flush();
    // A page of settled payments with their paid invoices, one year of history.
    for (let i = 0; i < 25; i++) {
      const invoice = em.create(Invoice, {
        number: `INV-BENCH-${String(i).padStart(6, '0')}`, user, subscription: sub, status: 'paid', billingReason: 'subscription_cycle', currency: 'IDR',
        issueDate: '2026-01-01', dueDate: '2026-01-04', subtotal: PRICE, totalAmount: PRICE, paidAt: now,
      } as unknown as Invoice);
      em.create(Payment, {
        orderId: `SUB-BENCHPAID${String(i).padStart(6, '0')}`, user, subscription: sub, invoice, status: 'settled', paymentType: 'bank_transfer',
        grossAmount: PRICE, currency: 'IDR', paymentDetails: { bank: 'bca', va_number: '1234567890' }, paidAt: now,
      } as unknown as Payment);
    }
    await em.flush();

    // A customer with many invoices, each a document of its own, for the PDF flood.
    const pdfUser = em.create(User, { username: 'bench-pdf', passwordHash: user.passwordHash, email: 'bench-pdf@example.com', firstName: 'Siti', lastName: 'Rahayu' } as User);
    await em.flush();
    const pdfInvoices = Array.from({ length: opts.pdfInvoices ?? 2000 }, (_, i) => i);
    const pdfInvoiceRows: Invoice[] = [];
    await inChunks(orm, pdfInvoices, 500, (chunkEm, i) => {
      const invoice = chunkEm.create(Invoice, {
        number: `INV-PDF-${String(i).padStart(6, '0')}`, user: chunkEm.getReference(User, pdfUser.id), status: 'paid', billingReason: 'subscription_cycle', currency: 'IDR',
        issueDate: '2026-01-01', dueDate: '2026-01-04', subtotal: PRICE, totalAmount: PRICE, amountRefunded: '0.00', paidAt: now,
      } as unknown as Invoice);
      chunkEm.create(InvoiceLine, { invoice, position: 0, description: `Plan 5, period ${i + 1}`, kind: 'subscription', quantity: 1, unitAmount: PRICE, amount: PRICE } as unknown as InvoiceLine);
      pdfInvoiceRows.push(invoice);
    });
    const pdfInvoiceIds = pdfInvoiceRows.map((i) => i.id);

    // Pending orders for the webhook, one user each (a user holds one live subscription).
    const orders = Array.from({ length: opts.webhookOrders }, (_, i) => `SUB-BENCH${String(i).padStart(8, '0')}`);
    const placeholderHash = 'scrypt$1$1$1$AAAA$AAAA';
    await inChunks(orm, orders, 2000, (chunkEm, orderId) => {
      const u = chunkEm.create(User, { username: `w-${orderId}`, passwordHash: placeholderHash } as User);
      const s = chunkEm.create(Subscription, {
        user: u, plan, status: 'pending', liveUserId: u.id, paymentType: 'bank_transfer', bank: 'bca', metadata: {}, customerDetails: {},
      } as unknown as Subscription);
      const inv = chunkEm.create(Invoice, {
        number: `INV-W-${orderId}`, user: u, subscription: s, status: 'open', billingReason: 'subscription_create', currency: 'IDR',
        issueDate: '2026-11-01', dueDate: '2026-11-02', subtotal: PRICE, totalAmount: PRICE,
      } as unknown as Invoice);
      chunkEm.create(Payment, {
        orderId, user: u, subscription: s, invoice: inv, status: 'pending', paymentType: 'bank_transfer', grossAmount: PRICE, currency: 'IDR',
        paymentDetails: { bank: 'bca', va_number: '1234567890' },
      } as unknown as Payment);
    });
    const webhookBodies = orders.map((orderId) =>
      JSON.stringify({
        transaction_time: '2026-11-22 10:00:00',
        transaction_status: 'settlement',
        transaction_id: randomUUID(),
        status_message: 'midtrans payment notification',
        status_code: '200',
        signature_key: computeSignature(orderId, '200', PRICE, opts.serverKey),
        payment_type: 'bank_transfer',
        order_id: orderId,
        merchant_id: 'G000000001',
        gross_amount: PRICE,
        fraud_status: 'accept',
        currency: 'IDR',
        va_numbers: [{ bank: 'bca', va_number: '1234567890' }],
      }),
    );
    // Fresh statistics now, so that autovacuum's analysis of the seeded tables does not run
    // during the first measurements (the baselines) and planners see real table sizes.
    await orm.em.getConnection().execute(databaseUrl.startsWith('sqlite:') ? 'analyze' : 'vacuum analyze');
    return { username: 'bench', password, benchUserId: user.id, webhookBodies, pdfUsername: 'bench-pdf', pdfInvoiceIds };
  } finally {
    await orm.close(true);
  }
}
