import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refundPaymentAsStaff } from '../../src/services/refunds/refund-payment.js';
import { DATABASES } from '../helpers/database.js';
import { runCli } from '../helpers/cli.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription } from '../helpers/subscriptions.js';

/* Issue 20: support staff list credit notes, of one user or of everyone, as the API shows them. */
describe.each(DATABASES)('billing-admin credit-notes list on %s', (kind) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
  });
  afterAll(() => server?.stop());

  const env = () => ({ DATABASE_URL: server.db.url, SESSION_SECRET: 'cli-test' });
  const cli = (...args: string[]) => runCli(['credit-notes', 'list', ...args], env());
  const staffRefund = async (orderId: string, amount: string, reason: string) => {
    const { orm, config, gateway, clock } = server.running.billing;
    await refundPaymentAsStaff({ em: orm.em.fork() as EntityManager, config, gateway, clock }, orderId, { amount, reason, keepSubscription: true });
  };

  it("lists a user's credit notes by username or id, everyone's without --user, newest first; an unknown user is not found", { timeout: 180_000 }, async () => {
    const alice = await server.createUser();
    const bob = await server.createUser();
    const { payment } = await activeSubscription(server, alice, 'basic-monthly');
    const other = (await activeSubscription(server, bob, 'basic-monthly')).payment;
    // Refunded in-process (`payments refund` has its own suite): each CLI run costs seconds here.
    await staffRefund(payment.order_id, '1000', 'goodwill');
    await staffRefund(payment.order_id, '2000', 'again');
    await staffRefund(other.order_id, '3000', 'bob');

    const mine = await cli('--user', alice.username, '--json');
    expect(mine.code).toBe(0);
    expect(mine.json).toHaveLength(2);
    expect(mine.json[0]).toMatchObject({ amount: '2000.00', memo: 'again', reason: 'refund', payment_id: payment.id, invoice_id: payment.invoice_id, username: alice.username });
    expect(mine.json[1]).toMatchObject({ amount: '1000.00', memo: 'goodwill' });
    expect(mine.json[0].number).toMatch(/^CN-\d{4}-\d{6}$/);
    // The same as the owner sees through the API (plus the username, for support).
    const api = await server.api('GET', `/credit-notes/${mine.json[0].id}/`, { auth: alice });
    const { lines: _lines, ...shown } = api.body;
    expect({ ...shown, username: alice.username }).toEqual(mine.json[0]);

    expect((await cli('--user', bob.id, '--json')).json).toHaveLength(1);
    const everyone = await cli('--json');
    expect(everyone.json.length).toBeGreaterThanOrEqual(3);

    const human = await cli('--user', alice.username);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain(mine.json[0].number);
    expect(human.stdout).toMatch(/number\s+issued_at\s+username\s+invoice_number\s+reason\s+amount/);

    const limited = await cli('--user', alice.username, '--limit', '1', '--json');
    expect(limited.json).toHaveLength(1);
    expect(limited.stderr).toContain('showing the newest 1 of 2');

    expect((await cli('--user', 'nobody-at-all')).code).toBe(4);
    expect((await cli('--limit', '0')).code).toBe(2);
  });
});
