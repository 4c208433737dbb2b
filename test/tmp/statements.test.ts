import { it } from 'vitest';
import { signedNotification } from '../helpers/factories.js';
import { STANDARD_PLANS, startTestServer } from '../helpers/server.js';
import { subscribe } from '../helpers/subscriptions.js';

it('lists the statements of one settlement', async () => {
  const kind = (process.env.KIND ?? 'postgresql') as 'sqlite' | 'postgresql';
  const server = await startTestServer(kind);
  await server.seedPlans(STANDARD_PLANS);
  const user = await server.createUser();
  const created = await subscribe(server, user, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
  await new Promise((r) => setTimeout(r, 500));
  const knex = (server.running.billing.orm.em.getConnection() as any).getKnex();
  const lines: string[] = [];
  const onQuery = (q: any) => lines.push(String(q.sql).slice(0, 220));
  knex.on('query', onQuery);
  const body = signedNotification(server.running.billing.config.gateway.serverKey, { order_id: created.body.payment.order_id, transaction_status: 'settlement', gross_amount: '150000.00' });
  const res = await server.api('POST', '/webhook/notification/', { body });
  await new Promise((r) => setTimeout(r, 300));
  knex.off('query', onQuery);
  console.log(res.status, JSON.stringify(res.body));
  console.log(lines.map((l, i) => `${i + 1}. ${l}`).join('\n'));
  await server.stop();
}, 60_000);
