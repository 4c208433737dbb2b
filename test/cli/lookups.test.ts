import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/knex';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/domain/errors.js';
import { refundPaymentAsStaff } from '../../src/services/refunds/refund-payment.js';
import {
  findUserByRef,
  getStaffCreditNote,
  getStaffRefund,
  getStaffTopup,
  getStaffWebhookLog,
  listStaffCreditNotes,
  listStaffNotifications,
  listStaffRefunds,
  listStaffTopups,
  listStaffWebhookLogs,
} from '../../src/services/staff-queries/index.js';
import { runCli } from '../helpers/cli.js';
import { DATABASES } from '../helpers/database.js';
import { pdfText } from '../helpers/pdf.js';
import { STANDARD_PLANS, startTestServer, type TestServer } from '../helpers/server.js';
import { activeSubscription, dbOf, subscribe, type TestUser } from '../helpers/subscriptions.js';

/*
 * Issue 30, CLI look-ups: support staff list and show every user's subscriptions, invoices and
 * payments with the staff API's filters, the same records as the API (--json) or CSV (--csv);
 * disable and enable accounts; write a credit note's PDF. One server per database; each CLI run
 * is a real process against it.
 */

const NASTY = 'Moving abroad, "for now"\nsee you';
const FAR_FUTURE = '2999-01-01';

/** The staff API's shape of a record: the owner's API record and the owner (schema `Owned`). */
const ownedBy = (record: Record<string, unknown>, user: TestUser) => ({ ...record, user: { id: user.id, username: user.username } });

describe.each(DATABASES)('billing-admin look-ups on %s', (kind) => {
  let server: TestServer;
  let dir: string;
  let alice: TestUser;
  let bob: TestUser;
  /** Alice's active subscription and its settled payment (refunded in part: a credit note). */
  let paid: { subscription: any; payment: any };
  /** Bob's subscription, canceled before payment with NASTY as its reason, and its payment. */
  let canceled: { subscription: any; payment: any };

  // The server's own PUBLIC_URL and SESSION_SECRET, as a deployment gives both: an invoice's hosted_url is made on them.
  const env = () => ({ DATABASE_URL: server.db.url, BILLING_URL: server.url, SESSION_SECRET: 'test-session-secret', PUBLIC_URL: server.url });
  const cli = (...args: string[]) => runCli(args, env());
  const services = () => {
    const { orm, config, gateway, clock } = server.running.billing;
    return { em: orm.em.fork() as EntityManager, config, gateway, clock };
  };

  beforeAll(async () => {
    server = await startTestServer(kind);
    await server.seedPlans(STANDARD_PLANS);
    dir = await mkdtemp(join(tmpdir(), 'lookups-'));
    alice = await server.createUser();
    bob = await server.createUser();
    paid = await activeSubscription(server, alice, 'basic-monthly');
    await refundPaymentAsStaff(services(), paid.payment.order_id, { amount: '1000', reason: 'goodwill', keepSubscription: true });
    paid.payment = (await server.api('GET', `/payments/${paid.payment.id}/`, { auth: alice })).body;
    const created = await subscribe(server, bob, { plan_id: 'pro-monthly', payment_type: 'bank_transfer' });
    const cancel = await server.api('POST', `/subscriptions/${created.body.subscription.id}/cancel/`, { auth: bob, body: { reason: NASTY, immediate: true } });
    expect(cancel.status).toBe(200);
    canceled = { subscription: cancel.body, payment: (await server.api('GET', `/payments/${created.body.payment.id}/`, { auth: bob })).body };
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('subscriptions list: each filter, newest first, the API record with --json, paging', { timeout: 240_000 }, async () => {
    expect(canceled.subscription.cancel_reason).toBe(NASTY);
    const mine = await cli('subscriptions', 'list', '--user', alice.username, '--json');
    expect(mine.code).toBe(0);
    expect(mine.json).toEqual([ownedBy(paid.subscription, alice)]);
    // By id as well as by username; an unknown user or status lists nothing (and is no error).
    expect((await cli('subscriptions', 'list', '--user', bob.id, '--status', 'canceled', '--json')).json).toEqual([ownedBy(canceled.subscription, bob)]);
    const nobody = await cli('subscriptions', 'list', '--user', 'nobody-at-all', '--json');
    expect([nobody.code, nobody.json]).toEqual([0, []]);
    expect((await cli('subscriptions', 'list', '--status', 'no-such-status', '--json')).json).toEqual([]);

    const both = await cli('subscriptions', 'list', '--created-before', FAR_FUTURE, '--json');
    expect(both.json.map((s: any) => s.id)).toEqual([canceled.subscription.id, paid.subscription.id]);
    expect((await cli('subscriptions', 'list', '--created-after', FAR_FUTURE, '--json')).json).toEqual([]);
    const since = await cli('subscriptions', 'list', '--created-after', canceled.subscription.created_at, '--json');
    expect(since.json.map((s: any) => s.id)).toEqual([canceled.subscription.id]);

    const second = await cli('subscriptions', 'list', '--limit', '1', '--page', '2', '--json');
    expect(second.json.map((s: any) => s.id)).toEqual([paid.subscription.id]);
    expect(second.stderr).toContain('subscriptions 2-2 of 2');

    const human = await cli('subscriptions', 'list');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/id\s+username\s+status/);
    expect(human.stdout).toContain(alice.username);
  });

  it('--csv: a header row, the API fields after the username, and a value with a comma, a quote and a line break parses back', { timeout: 180_000 }, async () => {
    const res = await cli('subscriptions', 'list', '--csv');
    expect(res.code).toBe(0);
    const rows: Record<string, string>[] = parse(res.stdout, { columns: true });
    expect(rows).toHaveLength(2);
    expect(Object.keys(rows[0]).slice(0, 3)).toEqual(['username', 'id', 'user_id']);
    const bobs = rows.find((r) => r.id === canceled.subscription.id)!;
    expect(bobs).toMatchObject({ username: bob.username, status: 'canceled', cancel_reason: NASTY, cancel_at_period_end: 'false' });
    // Nested values as their JSON; nulls as empty fields.
    expect(JSON.parse(bobs.plan)).toEqual(canceled.subscription.plan);
    expect(bobs.current_period_start).toBe('');

    const payments = await cli('payments', 'list', '--user', alice.username, '--csv');
    expect(parse(payments.stdout, { columns: true })).toMatchObject([{ username: alice.username, order_id: paid.payment.order_id, status: 'partially_refunded' }]);
    expect((await cli('payments', 'list', '--csv', '--json')).code).toBe(2);
  });

  it('invoices list and show: by number, by status, the API record with --json', { timeout: 180_000 }, async () => {
    const invoice = (await server.api('GET', `/invoices/${paid.payment.invoice_id}/`, { auth: alice })).body;
    const { lines: _lines, credit_notes: _notes, buyer_tax_profile: _profile, ...listed } = invoice;
    const byNumber = await cli('invoices', 'list', '--number', invoice.number.toLowerCase(), '--json');
    expect(byNumber.json).toEqual([ownedBy(listed, alice)]);
    expect((await cli('invoices', 'list', '--user', bob.username, '--status', 'paid', '--json')).json).toEqual([]);
    expect((await cli('invoices', 'list', '--status', 'paid', '--json')).json.map((i: any) => i.id)).toEqual([invoice.id]);

    const shown = await cli('invoices', 'show', invoice.number, '--json');
    expect(shown.json).toEqual(ownedBy(invoice, alice));
    expect(shown.json.credit_notes).toHaveLength(1);
    expect((await cli('invoices', 'show', invoice.id, '--json')).json).toEqual(shown.json);
    const human = await cli('invoices', 'show', invoice.id);
    expect(human.stdout).toContain(`number`);
    expect(human.stdout).toContain(invoice.number);
    expect(human.stdout).toMatch(/Lines:\n\s*kind\s+description/);
  });

  it('payments list and show: by order id, the API record, its refunds', { timeout: 180_000 }, async () => {
    const byOrder = await cli('payments', 'list', '--order-id', paid.payment.order_id, '--json');
    expect(byOrder.json).toEqual([ownedBy(paid.payment, alice)]);
    expect((await cli('payments', 'list', '--status', 'pending', '--user', bob.username, '--json')).json).toEqual([]);
    expect((await cli('payments', 'list', '--status', 'canceled', '--json')).json.map((p: any) => p.id)).toEqual([canceled.payment.id]);

    const shown = await cli('payments', 'show', paid.payment.order_id, '--json');
    expect(shown.code).toBe(0);
    const { refunds, ...payment } = shown.json;
    expect(payment).toEqual(ownedBy(paid.payment, alice));
    expect(refunds).toMatchObject([{ amount: '1000.00', status: 'succeeded', destination: 'wallet' }]);
  });

  it('payments show --gateway: the local and the gateway status side by side; an unreachable gateway is said and exits 5', { timeout: 180_000 }, async () => {
    const json = await cli('payments', 'show', paid.payment.id, '--gateway', '--json');
    expect(json.code).toBe(0);
    expect(json.json.gateway).toMatchObject({ local_status: 'partially_refunded', gateway_status: { order_id: paid.payment.order_id, status_code: '200' } });

    const human = await cli('payments', 'show', paid.payment.id, '--gateway');
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^local\s+partially_refunded\s/m);
    expect(human.stdout).toMatch(/^gateway\s+\w+\s/m);

    // Nothing listens on port 9: the gateway (the simulator behind BILLING_URL) cannot be reached.
    const away = await runCli(['payments', 'show', paid.payment.id, '--gateway'], { ...env(), BILLING_URL: 'http://127.0.0.1:9' });
    expect(away.code).toBe(5);
    expect(away.stdout).toContain(paid.payment.order_id);
    expect(away.stdout).toMatch(/gateway unreachable: gateway_unavailable/);
    expect(away.stderr.trim().split('\n')).toHaveLength(1);
  });

  const UNKNOWN = '00000000-0000-4000-8000-000000000000';
  it.each([
    ['subscriptions', 'show', [UNKNOWN, 'not-a-uuid']],
    ['payments', 'show', [UNKNOWN, 'not-a-uuid']],
    // Invoices and credit notes are also named by number: a non-UUID is looked up as one.
    ['invoices', 'show', ['not-a-uuid']],
    ['credit-notes', 'pdf', [UNKNOWN]],
  ])('%s %s of an unknown id or a non-UUID exits 4 with one line', { timeout: 180_000 }, async (group, verb, ids) => {
    for (const id of ids as string[]) {
      const res = await cli(group, verb, id);
      expect(res.code).toBe(4);
      expect(res.stdout).toBe('');
      expect(res.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^error: not_found: .*"${id}" not found\\.$`))]);
    }
  });

  it('a bad date or limit is a usage error (exit 2) naming the option', { timeout: 180_000 }, async () => {
    const date = await cli('invoices', 'list', '--created-after', 'yesterday');
    expect(date.code).toBe(2);
    expect(date.stderr).toContain('--created-after must be an ISO 8601 date or time, got "yesterday"');
    const before = await cli('payments', 'list', '--created-before', '2026-99-99');
    expect([before.code, before.stderr]).toEqual([2, expect.stringContaining('--created-before')]);
    expect((await cli('subscriptions', 'list', '--page', '0')).stderr).toContain('--page must be a whole number above 0');
  });

  it('users disable: login, Basic and an existing session answer 401 as a wrong password does; enable lets them in again', { timeout: 240_000 }, async () => {
    const carol = await server.createUser();
    const session = await server.login(carol);
    expect((await server.api('GET', '/auth/me/', { session })).status).toBe(200);
    expect((await server.api('GET', '/auth/me/', { auth: carol })).status).toBe(200);
    const wrong = await server.api('POST', '/auth/login/', { body: { username: carol.username, password: 'not the password' } });
    expect(wrong.status).toBe(401);

    const disabled = await cli('users', 'disable', '--reason', 'test: audited change', carol.username, '--json');
    expect(disabled.code).toBe(0);
    expect(disabled.json).toMatchObject({ changed: true, before: null, sessions_ended: 1, user: { id: carol.id, username: carol.username } });
    expect(disabled.json.after).toEqual(disabled.json.user.disabled_at);

    const login = await server.api('POST', '/auth/login/', { body: { username: carol.username, password: carol.password } });
    expect(login.status).toBe(401);
    expect(login.body).toEqual(wrong.body);
    expect((await server.api('GET', '/auth/me/', { session })).status).toBe(401);
    expect((await server.api('GET', '/auth/me/', { auth: carol })).status).toBe(401);

    const again = await cli('users', 'disable', '--reason', 'test: audited change', carol.id);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`${carol.username} is already disabled (since ${disabled.json.after})`);
    const shown = await cli('users', 'show', carol.username, '--json');
    expect(shown.json).toMatchObject({ id: carol.id, disabled_at: disabled.json.after });

    const enabled = await cli('users', 'enable', '--reason', 'test: audited change', carol.username, '--json');
    expect(enabled.json).toMatchObject({ changed: true, before: disabled.json.after, after: null, user: { disabled_at: null } });
    expect((await server.api('POST', '/auth/login/', { body: { username: carol.username, password: carol.password } })).status).toBe(200);
    expect((await server.api('GET', '/auth/me/', { auth: carol })).status).toBe(200);
    // The session that disabling ended stays ended.
    expect((await server.api('GET', '/auth/me/', { session })).status).toBe(401);
    expect((await cli('users', 'disable', '--reason', 'test: audited change', 'nobody-at-all')).code).toBe(4);
  });

  it('credit-notes pdf writes the PDF of a credit note named by number or id', { timeout: 180_000 }, async () => {
    const [note] = (await server.api('GET', '/credit-notes/', { auth: alice })).body.results;
    const out = join(dir, 'note.pdf');
    const res = await cli('credit-notes', 'pdf', note.number, '--out', out, '--json');
    expect(res.code).toBe(0);
    const pdf = await readFile(out);
    expect(res.json).toEqual({ number: note.number, file: out, bytes: pdf.length });
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    const text = await pdfText(pdf);
    expect(text).toContain(note.number);
    expect(text).toContain(paid.payment.order_id);

    const byId = await runCli(['credit-notes', 'pdf', note.id], env(), undefined, { cwd: dir });
    expect(byId.code).toBe(0);
    expect((await readFile(join(dir, `${note.number}.pdf`))).subarray(0, 5).toString()).toBe('%PDF-');
  });

  it('the other staff lists and look-ups filter the same way (in-process)', async () => {
    const ctx = { em: dbOf(server) };
    const all = { page: 1, pageSize: 100 };
    const refunds = await listStaffRefunds(ctx, { user: alice.username, status: 'succeeded' }, all);
    expect(refunds.items.map((r) => [r.amount, r.payment.orderId])).toEqual([['1000.00', paid.payment.order_id]]);
    expect((await listStaffRefunds(ctx, { orderId: canceled.payment.order_id }, all)).count).toBe(0);
    expect((await getStaffRefund(ctx, refunds.items[0].id)).payment.user.username).toBe(alice.username);

    const [note] = (await listStaffCreditNotes(ctx, {}, all)).items;
    const notes = await listStaffCreditNotes(ctx, { user: alice.id, number: note.number }, all);
    expect(notes.items.map((n) => n.id)).toEqual([note.id]);
    expect((await getStaffCreditNote(ctx, notes.items[0].id)).lines.length).toBeGreaterThan(0);
    expect((await listStaffCreditNotes(ctx, { user: bob.username }, all)).count).toBe(0);

    expect((await listStaffTopups(ctx, { user: alice.username }, all)).count).toBe(0);
    await expect(getStaffTopup(ctx, 'not-a-uuid')).rejects.toBeInstanceOf(NotFoundError);

    const bobsNotes = await listStaffNotifications(ctx, { user: bob.username }, all);
    expect(bobsNotes.count).toBeGreaterThan(0);
    expect(bobsNotes.items.every((n) => n.user.id === bob.id)).toBe(true);
    expect((await listStaffNotifications(ctx, { user: bob.username, status: 'no-such' }, all)).count).toBe(0);

    // A log names only its order: the user filter reads the logs of that user's orders.
    const logs = await listStaffWebhookLogs(ctx, { user: alice.username }, all);
    expect(logs.count).toBeGreaterThan(0);
    expect(new Set(logs.items.map((l) => l.orderId))).toEqual(new Set([paid.payment.order_id]));
    const bobsLogs = await listStaffWebhookLogs(ctx, { user: bob.username, status: 'processed' }, all);
    expect(new Set(bobsLogs.items.map((l) => [l.orderId, l.status].join(' ')))).toEqual(new Set([`${canceled.payment.order_id} processed`]));
    expect((await listStaffWebhookLogs(ctx, { user: bob.username, status: 'failed' }, all)).count).toBe(0);
    expect((await listStaffWebhookLogs(ctx, { orderId: paid.payment.order_id, createdAfter: new Date(FAR_FUTURE) }, all)).count).toBe(0);
    expect((await getStaffWebhookLog(ctx, logs.items[0].id)).id).toBe(logs.items[0].id);

    expect((await findUserByRef(ctx, alice.id)).username).toBe(alice.username);
    await expect(findUserByRef(ctx, 'nobody-at-all')).rejects.toBeInstanceOf(NotFoundError);
  });
});
