import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Subscription } from '../../src/db/entities/subscription.js';
import { DATABASES } from '../helpers/database.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { dbOf, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * A transaction the database keeps choosing as a deadlock victim is retried, and one that is
 * still chosen after the last retry answers 503 service_unavailable (retry later), never a bare
 * 500. PostgreSQL only: a trigger raises deadlock_detected (40P01) on every attempt, so the real
 * driver error travels the real path (MikroORM's DeadlockException, retryingTransaction, the
 * classification). A sequence counts the attempts: nextval survives the rollbacks.
 */
describe.skipIf(!DATABASES.includes('postgresql'))('a deadlock that outlasts the retries', () => {
  let server: TestServer;
  let user: TestUser;
  const logged: string[] = [];
  const keep = (message: string, fields?: Record<string, unknown>) => void logged.push(JSON.stringify({ message, ...fields }));
  beforeAll(async () => {
    server = await startTestServer('postgresql', { logger: { info: () => undefined, warn: keep, error: keep } });
    await server.seedPlans(STANDARD_PLANS);
    user = await server.createUser();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('answers 503 service_unavailable as problem+json after retrying, and the request succeeds once the contention is gone', async () => {
    const em = dbOf(server);
    await em.execute(`create sequence test_deadlock_attempts`);
    await em.execute(`create function test_deadlock() returns trigger language plpgsql as $$
      begin perform nextval('test_deadlock_attempts'); raise exception 'deadlock detected' using errcode = '40P01'; end $$`);
    await em.execute(`create trigger test_deadlock before insert on subscriptions for each row execute function test_deadlock()`);

    const refused = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(refused.status, refused.text).toBe(503);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 503, code: 'service_unavailable', type: 'https://billing.example/problems/service-unavailable' });
    expect(refused.body.detail).not.toMatch(/deadlock|40P01/);
    const [{ attempts }] = await em.execute(`select last_value as attempts from test_deadlock_attempts`);
    expect(Number(attempts)).toBeGreaterThan(1);
    expect(await dbOf(server).count(Subscription, { user: user.id })).toBe(0);
    // The operator reads why; the log holds neither the failing SQL nor the customer's values.
    const line = logged.find((l) => l.includes('request failed'));
    expect(line).toMatch(/service_unavailable: database contention outlasted the retries: deadlock detected/);
    expect(line).not.toMatch(/insert into|@example\.com/i);

    await em.execute(`drop trigger test_deadlock on subscriptions`);
    const created = await subscribe(server, user, { plan_id: 'basic-monthly', payment_type: 'bank_transfer' });
    expect(created.status, created.text).toBe(201);
  });
});
