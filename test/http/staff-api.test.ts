import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { User } from '../../src/db/entities/user.js';
import { OPENAPI_PATH } from '../../src/http/api.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { DATABASES } from '../helpers/database.js';
import type { HttpResult } from '../helpers/server.js';
import { activeSubscription, dbOf, serverOnClock, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 30, the staff API (docs/support.md): staff users and API keys see and act on
 * every user's records; anyone else finds no such routes (404); a read key cannot act; a revoked
 * key fails at once; every action leaves exactly one audit event naming who did it, by API or
 * CLI alike; and no interface can change an audit event.
 */

const ADMIN_OPERATIONS: { method: string; path: string }[] = Object.entries(parse(readFileSync(OPENAPI_PATH, 'utf8')).paths as Record<string, Record<string, unknown>>)
  .filter(([path]) => path.startsWith('/admin/'))
  .flatMap(([path, item]) => Object.keys(item).filter((m) => ['get', 'post'].includes(m)).map((m) => ({ method: m.toUpperCase(), path })));

const SOME_ID = '9d2e4f6a-8b1c-4d3e-a5f7-0b9c8d7e6f5a';
const concrete = (path: string) => path.replace('{id}', SOME_ID).replace('{user}', 'alice').replace('{customer}', 'alice').replace('{coupon}', 'LAUNCH25').replace('{code}', 'launch25').replace('{metric}', 'api_calls');
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe.each(DATABASES)('the staff API (%s)', { timeout: 180_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-03-01T03:00:00.000Z'));
  let staff: TestUser;
  let readKey: string;
  let writeKey: string;
  let env: Record<string, string>;

  const cli = (args: string[]) => runCli(['--json', ...args], { ...env, BILLING_OPERATOR: 'ops-oncall' });
  const auditOf = async (target: string) => dbOf(stage.server).find(AuditEvent, { targetId: target }, { orderBy: { occurredAt: 'asc' } });

  beforeAll(async () => {
    staff = await stage.server.createUser({ isStaff: true });
    env = cliEnv(stage.server);
    const made = await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'support-desk', '--scope', 'write']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.json).toMatchObject({ name: 'support-desk', scope: 'write', key: expect.stringMatching(/^bsk_/) });
    writeKey = made.json.key;
    readKey = (await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'reporting', '--scope', 'read'])).json.key;
  });

  it('anyone but staff gets the 404 of a route that does not exist, on every staff route: anonymous, a customer by Basic, a customer by session', async () => {
    const { server, user } = stage;
    const session = await server.login(user);
    const nowhere = await server.api('GET', '/admin/no-such-thing/');
    expect(nowhere.status).toBe(404);
    expect(ADMIN_OPERATIONS.length).toBeGreaterThanOrEqual(24);
    for (const op of ADMIN_OPERATIONS) {
      const path = concrete(op.path);
      const body = op.method === 'POST' ? { reason: 'x', amount: '1' } : undefined;
      const answers: HttpResult[] = [
        await server.api(op.method, path, { body }),
        await server.api(op.method, path, { body, auth: user }),
        await server.api(op.method, path, { body, session, headers: { 'x-csrf-token': session.csrfToken } }),
      ];
      for (const res of answers) {
        expect(res.status, `${op.method} ${path}: ${res.text}`).toBe(404);
        expect(res.body).toEqual({ ...nowhere.body, detail: `No operation at ${op.method} ${server.running ? `/api/subscriptions${path}` : path}.` });
      }
    }
  });

  it("staff by Basic and any key see every user's records, with filters; a customer's own API is unchanged", async () => {
    const { server, user } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'bank_transfer');
    for (const headers of [undefined, bearer(readKey), bearer(writeKey)]) {
      const auth = headers ? undefined : staff;
      const subs = await server.api('GET', `/admin/subscriptions/?user=${user.username}`, { auth, headers });
      expect(subs.status, subs.text).toBe(200);
      expect(subs.body).toMatchObject({ count: 1, results: [{ id: subscription.id, user: { id: user.id, username: user.username } }] });
      const byOrder = await server.api('GET', `/admin/payments/?order_id=${payment.order_id}`, { auth, headers });
      expect(byOrder.body).toMatchObject({ count: 1, results: [{ id: payment.id, status: 'settled', user: { username: user.username } }] });
      expect((await server.api('GET', `/admin/payments/?user=${user.id}&status=pending`, { auth, headers })).body.count).toBe(0);
      expect((await server.api('GET', '/admin/subscriptions/?user=nobody-at-all', { auth, headers })).body).toMatchObject({ count: 0, results: [] });
    }
    const detail = await server.api('GET', `/admin/payments/${payment.id}/?gateway=true`, { headers: bearer(readKey) });
    expect(detail.status, detail.text).toBe(200);
    expect(detail.body).toMatchObject({ id: payment.id, refunds: [], gateway: { local_status: 'settled', gateway_status: { transaction_status: 'settlement' } } });
    const invoice = await server.api('GET', `/admin/invoices/${payment.invoice_id}/`, { headers: bearer(readKey) });
    expect(invoice.body).toMatchObject({ id: payment.invoice_id, user: { id: user.id }, lines: [expect.objectContaining({})] });
    const wallet = await server.api('GET', `/admin/wallets/${user.username}/`, { headers: bearer(readKey) });
    expect(wallet.body).toMatchObject({ user: { id: user.id }, wallet: { balance: '0.00' }, transactions: { count: 0 } });
    expect((await server.api('GET', '/admin/webhook-logs/?status=processed', { headers: bearer(readKey) })).body.count).toBeGreaterThan(0);
    expect((await server.api('GET', '/admin/subscriptions/?created_after=yesterday', { headers: bearer(readKey) })).status).toBe(400);
    expect((await server.api('GET', `/admin/subscriptions/${SOME_ID}/`, { headers: bearer(readKey) })).status).toBe(404);
    expect((await server.api('GET', '/admin/subscriptions/not-a-uuid/', { headers: bearer(readKey) })).status).toBe(404);
  });

  it('a read key cannot act (403 insufficient_scope, nothing changes); a write key refunds, with one audit event naming the key; the customer sees the description, never the reason', async () => {
    const { server, user } = stage;
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const refused = await server.api('POST', `/admin/payments/${payment.id}/refund/`, { headers: bearer(readKey), body: { reason: 'Ticket 1: duplicate' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'insufficient_scope' });
    expect(await auditOf(payment.id)).toEqual([]);

    const noReason = await server.api('POST', `/admin/payments/${payment.id}/refund/`, { headers: bearer(writeKey), body: {} });
    expect(noReason.status).toBe(400);

    const res = await server.api('POST', `/admin/payments/${payment.id}/refund/`, {
      headers: { ...bearer(writeKey), 'x-request-id': 'req-ticket-1' },
      body: { reason: 'Ticket 1: charged twice', description: 'Refund of the duplicate charge' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ payment: { status: 'refunded' }, refund: { status: 'succeeded', description: 'Refund of the duplicate charge' }, subscription: { id: subscription.id, status: 'canceled' } });
    expect(res.headers.get('x-request-id')).toBe('req-ticket-1');
    const events = await auditOf(payment.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: 'api_key', actorName: 'support-desk', action: 'payment.refund', reason: 'Ticket 1: charged twice', requestId: 'req-ticket-1' });
    expect(events[0].changes).toMatchObject({ status: ['settled', 'refunded'], refunded_amount: ['0.00', '50000.00'] });
    const customerView = JSON.stringify([(await server.api('GET', '/notifications/', { auth: user })).body, (await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body]);
    expect(customerView).not.toContain('Ticket 1');
  });

  it('the same staff refund sent 20 times at once refunds once, at the gateway once, with one audit event (issue 30 review)', async () => {
    const { server, user } = stage;
    const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        server.api('POST', `/admin/payments/${payment.id}/refund/`, { headers: bearer(writeKey), body: { reason: 'Ticket 7: at once', description: 'Refund' } }),
      ),
    );
    // The requests that find the refund still in flight drive that same refund again (its
    // refund_key) and answer with it; those after it find nothing left (409).
    const done = answers.filter((a) => a.status === 200);
    expect(done.length).toBeGreaterThanOrEqual(1);
    expect(new Set(done.map((a) => a.body.refund.refund_key))).toEqual(new Set([`${payment.order_id}-r1`]));
    for (const a of answers.filter((x) => x.status !== 200)) expect(a.status, a.text).toBe(409);
    const tx = server.running.billing.simulator!.transaction(payment.order_id)!;
    expect(tx.refunds).toHaveLength(1);
    expect((await server.api('GET', `/payments/${payment.id}/`, { auth: user })).body).toMatchObject({ status: 'refunded', refunded_amount: '50000.00' });
    expect(await auditOf(payment.id)).toHaveLength(1);
  });

  it("a staff refund whose gateway answer is lost (a 5xx after the effect): 202 pending, then the retry settles the same refund; one audit event (issue 30 review)", async () => {
    const { server, user } = stage;
    const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    await server.request('POST', '/_simulator/faults', { body: { mode: 'http_500', when: 'after', count: 1, operations: ['refund'], notify: false } });
    const send = () => server.api('POST', `/admin/payments/${payment.id}/refund/`, { headers: bearer(writeKey), body: { reason: 'Ticket 8: lost answer' } });
    const lost = await send();
    expect(lost.status, lost.text).toBe(202);
    expect(lost.body.refund).toMatchObject({ status: 'pending', refund_key: `${payment.order_id}-r1` });
    expect(await auditOf(payment.id)).toEqual([expect.objectContaining({ action: 'payment.refund', changes: expect.objectContaining({ refund: [null, expect.objectContaining({ status: 'pending' })] }) })]);
    const retry = await send();
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body.refund).toMatchObject({ status: 'succeeded', refund_key: `${payment.order_id}-r1` });
    expect(server.running.billing.simulator!.transaction(payment.order_id)!.refunds).toHaveLength(1);
    expect(await auditOf(payment.id)).toHaveLength(1);
  });

  it('staff by session adjust a wallet with the CSRF token; the ledger shows the description; the audit trail the staff user, the reason and the balance before and after', async () => {
    const { server, user } = stage;
    const session = await server.login(staff);
    const path = `/admin/wallets/${user.username}/adjust/`;
    const noToken = await server.api('POST', path, { session, headers: { 'x-csrf-token': 'not-the-token' }, body: { amount: '25000', reason: 'Ticket 2: outage' } });
    expect(noToken.status).toBe(403);
    const res = await server.api('POST', path, {
      session,
      headers: { 'x-csrf-token': session.csrfToken },
      body: { amount: '25000', reason: 'Ticket 2: outage', description: 'Goodwill credit' },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ already_applied: false, wallet: { balance: '25000.00' }, transaction: { description: 'Goodwill credit', amount: '25000.00' } });
    const ledger = await server.api('GET', '/wallet/transactions/', { auth: user });
    expect(JSON.stringify(ledger.body)).not.toContain('Ticket 2');
    const events = await auditOf(res.body.wallet.id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actorType: 'staff', actorId: staff.id, actorName: staff.username, action: 'wallet.adjust', reason: 'Ticket 2: outage' });
    expect(events[0].changes).toEqual({ balance: ['0.00', '25000.00'] });
    const debit = await server.api('POST', path, { auth: staff, body: { amount: '-30000', reason: 'too much' } });
    expect(debit.status).toBe(409);
    expect(await auditOf(res.body.wallet.id)).toHaveLength(1);
  });

  it('cancel, pause and resume by staff follow the customer rules and leave one audit event each', async () => {
    const { server, user } = stage;
    const { subscription } = await activeSubscription(server, user, 'basic-monthly', 'bank_transfer');
    const act = (action: string, body: Record<string, unknown>) => server.api('POST', `/admin/subscriptions/${subscription.id}/${action}/`, { headers: bearer(writeKey), body });
    expect((await act('pause', { reason: 'Ticket 3: travelling' })).body).toMatchObject({ status: 'paused', user: { id: user.id } });
    expect((await act('pause', { reason: 'again' })).status).toBe(409);
    expect((await act('resume', { reason: 'Ticket 3: back' })).body).toMatchObject({ status: 'active' });
    expect((await act('cancel', { reason: 'Ticket 3: leaving', at_period_end: true })).body).toMatchObject({ status: 'active', cancel_at_period_end: true });
    const events = await auditOf(subscription.id);
    expect(events.map((e) => [e.action, e.reason, e.changes.status ?? e.changes.cancel_at_period_end])).toEqual([
      ['subscription.pause', 'Ticket 3: travelling', ['active', 'paused']],
      ['subscription.resume', 'Ticket 3: back', ['paused', 'active']],
      ['subscription.cancel', 'Ticket 3: leaving', [false, true]],
    ]);
    const listed = await server.api('GET', `/admin/audit-events/?target=${subscription.id}`, { headers: bearer(readKey) });
    expect(listed.body.results.map((e: { action: string }) => e.action)).toEqual(['subscription.cancel', 'subscription.resume', 'subscription.pause']);
  });

  it('a CLI change is audited with the operating-system user (or BILLING_OPERATOR) and the command line; audit list filters by target and actor', async () => {
    const { server, user } = stage;
    const adjusted = await cli(['wallet', 'adjust', user.username, '5000', '--reason', 'Ticket 4: promo', '--description', 'Promo credit']);
    expect(adjusted.code, adjusted.stderr).toBe(0);
    const walletId = adjusted.json.wallet.id;
    const listed = await cli(['audit', 'list', '--target', walletId]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json).toEqual([
      expect.objectContaining({
        actor: { type: 'cli', id: expect.any(String), name: 'ops-oncall' },
        action: 'wallet.adjust',
        reason: 'Ticket 4: promo',
        request_id: expect.stringContaining('wallet adjust'),
        changes: { balance: ['0.00', '5000.00'] },
      }),
    ]);
    expect((await cli(['audit', 'list', '--actor', 'ops-oncall'])).json.length).toBeGreaterThanOrEqual(3); // two keys made, one adjustment

    // A refund and a user's disabling by the CLI: one event each, the reason in the trail only.
    const { payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const refunded = await cli(['payments', 'refund', payment.order_id, '--reason', 'Ticket 5: refund by CLI', '--description', 'Refund as agreed']);
    expect(refunded.code, refunded.stderr).toBe(0);
    expect(await auditOf(payment.id)).toEqual([expect.objectContaining({ actorType: 'cli', actorName: 'ops-oncall', action: 'payment.refund', reason: 'Ticket 5: refund by CLI' })]);
    expect(JSON.stringify((await server.api('GET', '/notifications/', { auth: user })).body)).not.toContain('Ticket 5');
    for (const verb of ['disable', 'disable', 'enable']) {
      const done = await cli(['users', verb, user.username, '--reason', `Ticket 6: ${verb}`]);
      expect(done.code, done.stderr).toBe(0);
    }
    // An account made by the CLI: audited, its password redacted from the recorded command line.
    const made = await cli(['users', 'create', '--reason', 'test: audited change', '--username', `newhire-${kind}`, '--password', 'a secret long password']);
    expect(made.code, made.stderr).toBe(0);
    const [created] = await auditOf(made.json.id);
    expect(created).toMatchObject({ action: 'user.create', actorName: 'ops-oncall', requestId: expect.stringContaining('--password [redacted]') });
    expect(JSON.stringify(created)).not.toContain('a secret long password');
    // Disabling twice changes nothing the second time, so it leaves no second event.
    expect((await auditOf(user.id)).map((e) => [e.action, e.reason, e.actorName])).toEqual([
      ['user.disable', 'Ticket 6: disable', 'ops-oncall'],
      ['user.enable', 'Ticket 6: enable', 'ops-oncall'],
    ]);
    const viaApi = await server.api('GET', `/admin/audit-events/?actor=ops-oncall&target=${walletId}`, { auth: staff });
    expect(viaApi.body).toMatchObject({ count: 1, results: [{ action: 'wallet.adjust' }] });
  });

  it('a revoked key fails at once, on a server process that used it a moment before; last use is kept', async () => {
    const { server } = stage;
    const made = await cli(['api-keys', 'create', '--reason', 'test: audited change', '--name', 'temp', '--scope', 'read']);
    const key = made.json.key;
    expect((await server.api('GET', '/admin/payments/', { headers: bearer(key) })).status).toBe(200);
    const listed = await cli(['api-keys', 'list']);
    expect(listed.json.find((k: { id: string }) => k.id === made.json.id)).toMatchObject({ last_used_at: expect.any(String), revoked_at: null });
    expect(JSON.stringify(listed.json)).not.toContain(key);
    const revoked = await cli(['api-keys', 'revoke', '--reason', 'test: audited change', made.json.id]);
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = await server.api('GET', '/admin/payments/', { headers: bearer(key) });
    expect(after.status).toBe(401);
    expect(after.body).toMatchObject({ code: 'invalid_api_key' });
    expect((await server.api('GET', '/admin/payments/', { headers: bearer('bsk_made-up') })).status).toBe(401);
    expect((await auditOf(made.json.id)).map((e) => e.action)).toEqual(['api_key.create', 'api_key.revoke']);
  });

  it('no interface changes an audit event: the database refuses UPDATE and DELETE (and TRUNCATE on PostgreSQL)', async () => {
    const { server } = stage;
    const em = dbOf(server);
    const [event] = await em.find(AuditEvent, {}, { limit: 1 });
    expect(event).toBeDefined();
    await expect(em.getConnection().execute(`update audit_events set reason = 'rewritten' where id = ?`, [event.id])).rejects.toThrow(/append-only/);
    await expect(em.getConnection().execute(`delete from audit_events where id = ?`, [event.id])).rejects.toThrow(/append-only/);
    if (kind === 'postgresql') await expect(em.getConnection().execute('truncate audit_events')).rejects.toThrow(/append-only/);
    expect((await dbOf(server).findOneOrFail(AuditEvent, event.id)).reason).toBe(event.reason);
    // The staff API has no route that writes one: only GET lists them.
    expect((await server.api('DELETE', `/admin/audit-events/`, { auth: staff })).status).toBe(405);
  });

  it('reports answer one row per month; a bad month is a 400 naming the field', async () => {
    const { server } = stage;
    const res = await server.api('GET', '/admin/reports/revenue/?from=2027-01&to=2027-03', { headers: bearer(readKey) });
    expect(res.status, res.text).toBe(200);
    expect(res.body.rows.map((r: { month: string }) => r.month)).toEqual(['2027-01', '2027-02', '2027-03']);
    for (const name of ['mrr', 'churn']) expect((await server.api('GET', `/admin/reports/${name}/?from=2027-03&to=2027-03`, { headers: bearer(readKey) })).status).toBe(200);
    const bad = await server.api('GET', '/admin/reports/mrr/?from=2027-13&to=2027-03', { headers: bearer(readKey) });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: 'from' })]);
    const backwards = await server.api('GET', '/admin/reports/churn/?from=2027-04&to=2027-03', { headers: bearer(readKey) });
    expect(backwards.status).toBe(400);
  });

  it('a disabled staff user loses the staff API at once', async () => {
    const { server } = stage;
    const other = await server.createUser({ isStaff: true });
    expect((await server.api('GET', '/admin/payments/', { auth: other })).status).toBe(200);
    await dbOf(server).nativeUpdate(User, { id: other.id }, { isStaff: false });
    expect((await server.api('GET', '/admin/payments/', { auth: other })).status).toBe(404);
  });
});
