import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { Notification } from '../../src/db/entities/notification.js';
import { eventHash } from '../../src/services/audit/audit-chain.js';
import { User } from '../../src/db/entities/user.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/cli-server.js';
import { createTestDatabase, DATABASES } from '../helpers/database.js';
import { migratorOf, openOrm } from '../../src/db/orm.js';
import { verifyAuditChain } from '../../src/services/audit/verify-audit-chain.js';
import { activeSubscription, dbOf, serverOnClock } from '../helpers/subscriptions.js';

/*
 * Issue 40, rows 11 and 12 (docs/audit.md): the audit trail is a hash chain that
 * `billing-admin audit verify` walks; an event changed or deleted behind the service's back (raw
 * SQL, its triggers lifted by the table's owner) is named; SQLite refuses INSERT OR REPLACE;
 * appends at once make one chain without gap or fork; a refund's implied cancellation and a
 * resend's real "before" are recorded; the CLI refuses a change without --reason; a no-op records
 * nothing.
 */

describe.each(DATABASES)('the audit trail as a hash chain (%s)', { timeout: 240_000 }, (kind) => {
  const stage = serverOnClock(kind, new Date('2027-04-01T03:00:00.000Z'));
  const env = () => ({ ...cliEnv(stage.server), BILLING_OPERATOR: 'ops-oncall' });
  const cli = (args: string[]) => runCli(['--json', ...args], env());
  const staffAuth = async () => stage.server.createUser({ isStaff: true });
  const chain = async () => dbOf(stage.server).find(AuditEvent, {}, { orderBy: { chainPosition: 'asc' } });

  /** Runs SQL as the table's owner with the append-only triggers lifted, as only an owner (or a superuser) can. */
  async function tamper(sql: string, params: unknown[]): Promise<void> {
    const em = dbOf(stage.server);
    await em.transactional(async (tx) => {
      const run = (q: string, p: unknown[] = []) => tx.getConnection().execute(q, p, 'run', tx.getTransactionContext());
      if (kind === 'postgresql') {
        await run('alter table audit_events disable trigger audit_events_no_update_or_delete');
        await run(sql, params);
        await run('alter table audit_events enable trigger audit_events_no_update_or_delete');
      } else {
        await run('drop trigger audit_events_no_update');
        await run('drop trigger audit_events_no_delete');
        await run(sql, params);
        await run("create trigger audit_events_no_update before update on audit_events begin select raise(abort, 'audit events are append-only: update refused'); end;");
        await run("create trigger audit_events_no_delete before delete on audit_events begin select raise(abort, 'audit events are append-only: delete refused'); end;");
      }
    });
  }

  it('after a series of actions (keys, a refund that cancels, pause, wallet adjustments) the chain is whole: positions 1..n, each linked to the one before; audit verify exit 0', async () => {
    const { server, user } = stage;
    const staff = await staffAuth();
    expect((await cli(['api-keys', 'create', '--name', 'desk', '--scope', 'write', '--reason', 'Ticket 1: the desk needs a key'])).code).toBe(0);
    const { subscription, payment } = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    const refund = await server.api('POST', `/admin/payments/${payment.id}/refund/`, { auth: staff, body: { reason: 'Ticket 2: charged twice' } });
    expect(refund.status, refund.text).toBe(200);
    expect(refund.body.subscription).toMatchObject({ status: 'canceled' });

    // The cancellation the refund implied has its own event, with the refund's actor and reason.
    const onSubscription = await dbOf(server).find(AuditEvent, { targetId: subscription.id });
    expect(onSubscription).toEqual([
      expect.objectContaining({ action: 'subscription.cancel', actorName: staff.username, reason: 'Ticket 2: charged twice' }),
    ]);
    expect(onSubscription[0].changes).toMatchObject({ status: ['active', 'canceled'], implied_by: [null, `payment.refund ${payment.id}`] });

    const second = await activeSubscription(server, user, 'basic-monthly', 'gopay');
    expect((await server.api('POST', `/admin/subscriptions/${second.subscription.id}/pause/`, { auth: staff, body: { reason: 'Ticket 3: travelling' } })).status).toBe(200);
    expect((await server.api('POST', `/admin/wallets/${user.username}/adjust/`, { auth: staff, body: { amount: '5000.00', reason: 'Ticket 4: goodwill' } })).status).toBe(200);

    const events = await chain();
    expect(events.map((e) => e.chainPosition)).toEqual(events.map((_, i) => i + 1));
    events.forEach((e, i) => expect(e.previousHash).toBe(i === 0 ? null : events[i - 1].hash));
    const verified = await cli(['audit', 'verify']);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.json).toMatchObject({ ok: true, events_checked: events.length, broken: null, head: { position: events.length, event_id: events.at(-1)!.id, hash: events.at(-1)!.hash } });
  });

  it('forty staff actions at once make one chain: positions 1..n without a gap or a fork, and audit verify passes', async () => {
    const { server, user } = stage;
    const staff = await staffAuth();
    const before = (await chain()).length;
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        server.api('POST', `/admin/wallets/${user.username}/adjust/`, { auth: staff, body: { amount: '100.00', reason: `Ticket 5: credit ${i}`, reference: `ticket-5-${i}` } }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const events = await chain();
    expect(events).toHaveLength(before + 40);
    expect(events.map((e) => e.chainPosition)).toEqual(events.map((_, i) => i + 1));
    expect(new Set(events.map((e) => e.previousHash)).size).toBe(events.length);
    expect((await cli(['audit', 'verify'])).json).toMatchObject({ ok: true, events_checked: events.length });
  });

  it('the CLI refuses a change without --reason (exit 2, nothing changed); a no-op records nothing', async () => {
    const { server, user } = stage;
    const made = await cli(['api-keys', 'create', '--name', 'temp', '--scope', 'read', '--reason', 'Ticket 6: a temporary key']);
    expect(made.code, made.stderr).toBe(0);
    const count = (await chain()).length;
    for (const args of [
      ['api-keys', 'revoke', made.json.id],
      ['api-keys', 'create', '--name', 'another', '--scope', 'read'],
      ['users', 'set-password', '--username', user.username, '--password', 'a new long password'],
      ['users', 'disable', user.username],
      ['notifications', 'redeliver', '5a0a7c52-7d2e-4f38-9a51-0f6a6f0d7c11'],
      ['webhooks', 'prune', '--older-than', '90d'],
      ['plans', 'archive', 'basic-monthly'],
      ['api-keys', 'revoke', made.json.id, '--reason', '  '],
    ]) {
      const res = await cli(args);
      expect(res.code, `${args.join(' ')}: ${res.stderr}`).toBe(2);
      expect(res.json, args.join(' ')).toMatchObject({ error: { code: 'usage_error', message: expect.stringMatching(/--reason|empty/) } });
    }
    expect((await server.api('GET', `/admin/wallets/${user.username}/`, { auth: await staffAuth() })).status).toBe(200);
    expect((await dbOf(server).findOneOrFail(User, user.id)).disabledAt).toBeNull();
    expect(await chain()).toHaveLength(count);
    // A dry run changes nothing and needs no reason.
    expect((await cli(['webhooks', 'prune', '--older-than', '90d', '--dry-run'])).code).toBe(0);

    // Revoking twice: the second changes nothing and records nothing.
    expect((await cli(['api-keys', 'revoke', made.json.id, '--reason', 'Ticket 6: done'])).code).toBe(0);
    expect((await cli(['api-keys', 'revoke', made.json.id, '--reason', 'Ticket 6: done again'])).code).toBe(0);
    const onKey = await dbOf(server).find(AuditEvent, { targetId: made.json.id }, { orderBy: { chainPosition: 'asc' } });
    expect(onKey.map((e) => [e.action, e.reason])).toEqual([
      ['api_key.create', 'Ticket 6: a temporary key'],
      ['api_key.revoke', 'Ticket 6: done'],
    ]);
  });

  it('a resend of a failed notification records its real "before": the status and attempts before the resend', async () => {
    const { server, user } = stage;
    const staff = await staffAuth();
    const em = dbOf(server);
    const failed = em.create(Notification, {
      user: em.getReference(User, user.id),
      notificationType: 'payment_succeeded',
      channel: 'webhook',
      status: 'failed',
      title: 'Payment received',
      message: 'Thank you',
      attempts: 5,
      lastError: 'connect ECONNREFUSED',
      createdAt: new Date(),
    });
    await em.flush();
    const res = await server.api('POST', `/admin/notifications/${failed.id}/resend/`, { auth: staff, body: { reason: 'Ticket 7: the shop fixed its endpoint' } });
    expect(res.status, res.text).toBe(200);
    const [event] = await dbOf(server).find(AuditEvent, { targetId: failed.id });
    expect(event).toMatchObject({ action: 'notification.resend', reason: 'Ticket 7: the shop fixed its endpoint' });
    expect(event.changes.status[0]).toBe('failed');
    expect(event.changes.attempts[0]).toBe(5);
  });

  it.runIf(kind === 'sqlite')('SQLite refuses INSERT OR REPLACE (and REPLACE INTO, and an upsert) over an audit event', async () => {
    const [first] = await chain();
    const conn = dbOf(stage.server).getConnection();
    for (const sql of [
      `insert or replace into audit_events select id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, 'rewritten', request_id, changes, chain_position, previous_hash, hash from audit_events where id = ?`,
      `replace into audit_events select id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, 'rewritten', request_id, changes, chain_position, previous_hash, hash from audit_events where id = ?`,
      `insert into audit_events select id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, 'rewritten', request_id, changes, chain_position, previous_hash, hash from audit_events where id = ? on conflict(id) do update set reason = 'rewritten'`,
    ]) {
      await expect(conn.execute(sql, [first.id], 'run')).rejects.toThrow(/append-only/);
    }
    expect((await dbOf(stage.server).findOneOrFail(AuditEvent, first.id)).reason).toBe(first.reason);
  });

  it.runIf(kind === 'postgresql')("PostgreSQL: a runtime role that does not own the table can neither disable the triggers, nor set session_replication_role, nor update an event", async () => {
    const role = `billing_runtime_${process.pid}`;
    const client = new pg.Client({ connectionString: (env() as Record<string, string>).DATABASE_URL });
    await client.connect();
    try {
      await client.query(`do $$ begin if not exists (select from pg_roles where rolname = '${role}') then create role ${role} nologin; end if; end $$`);
      await client.query(`grant select, insert on audit_events to ${role}`);
      await client.query(`set role ${role}`);
      await expect(client.query('alter table audit_events disable trigger audit_events_no_update_or_delete')).rejects.toThrow(/must be owner/);
      await expect(client.query('set session_replication_role = replica')).rejects.toThrow(/permission denied/);
      await expect(client.query(`update audit_events set reason = 'rewritten'`)).rejects.toThrow(/permission denied|append-only/);
      await client.query('reset role');
      await client.query(`revoke all on audit_events from ${role}`);
      await client.query(`drop role ${role}`);
    } finally {
      await client.end();
    }
  });

  it("an event's reason rewritten behind the service's back (triggers lifted by the owner) is named by audit verify, exit 1; a deleted event is named as a gap", async () => {
    const events = await chain();
    const victim = events[2];
    await tamper('update audit_events set reason = ? where id = ?', ['nothing to see here', victim.id]);
    const caught = await cli(['audit', 'verify']);
    expect(caught.code, caught.stderr).toBe(1);
    expect(caught.json).toMatchObject({ ok: false, broken: { position: 3, event_id: victim.id, problem: 'content_changed' } });
    const human = await runCli(['audit', 'verify'], env());
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(victim.id);

    // Put back as it was: whole again.
    await tamper('update audit_events set reason = ? where id = ?', [victim.reason, victim.id]);
    expect((await cli(['audit', 'verify'])).code).toBe(0);

    // The hash recomputed by the tamperer too: the next event's link names where it breaks.
    const rehashed = events[4];
    await tamper('update audit_events set reason = ?, hash = ? where id = ?', ['quietly', eventHash({ ...rehashed, reason: 'quietly' }), rehashed.id]);
    const relinked = await cli(['audit', 'verify']);
    expect(relinked.code).toBe(1);
    expect(relinked.json.broken).toMatchObject({ position: 6, event_id: events[5].id, problem: 'link_broken' });
    await tamper('update audit_events set reason = ?, hash = ? where id = ?', [rehashed.reason, rehashed.hash, rehashed.id]);

    const deleted = events[6];
    await tamper('delete from audit_events where id = ?', [deleted.id]);
    const gap = await cli(['audit', 'verify']);
    expect(gap.code).toBe(1);
    expect(gap.json).toMatchObject({ ok: false, broken: { position: 7, event_id: events[7].id, problem: 'gap' } });
    expect(gap.json.broken.message).toContain('position 7 is missing');
  });
});

describe.each(DATABASES)('the migration that made the chain (%s)', { timeout: 120_000 }, (kind) => {
  it('chains the events written before it in occurred_at, id order, with the hash audit verify checks', async () => {
    const db = await createTestDatabase(kind);
    const orm = await openOrm(db.url, { create: true });
    try {
      const migrator = await migratorOf(orm);
      await migrator.up({ to: 'Migration20261128015812' });
      const conn = orm.em.getConnection();
      const at = (iso: string) => (kind === 'sqlite' ? new Date(iso).getTime() : iso);
      const rows = [
        ['b5d8a3f2-0000-4000-8000-000000000002', '2027-01-02T00:00:00.000Z', 'payment.refund', 'Ticket 9: twice', { status: ['settled', 'refunded'], refund: [null, { b: 1, a: 2 }] }],
        ['b5d8a3f2-0000-4000-8000-000000000001', '2027-01-01T00:00:00.000Z', 'wallet.adjust', null, { balance: ['0.00', '5000.00'] }],
        ['b5d8a3f2-0000-4000-8000-000000000003', '2027-01-02T00:00:00.000Z', 'user.disable', 'Ticket 10', { disabled_at: [null, '2027-01-02T00:00:00.000Z'] }],
      ] as const;
      for (const [id, occurred, action, reason, changes] of rows) {
        await conn.execute(
          'insert into audit_events (id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, reason, request_id, changes) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [id, at(occurred), 'staff', 'u1', 'sari', action, 'thing', 't1', reason, 'req-1', JSON.stringify(changes)],
        );
      }
      await migrator.up();
      const em = orm.em.fork();
      const chained = await em.find(AuditEvent, {}, { orderBy: { chainPosition: 'asc' } });
      expect(chained.map((e) => [e.chainPosition, e.id.slice(-1)])).toEqual([[1, '1'], [2, '2'], [3, '3']]);
      expect(await verifyAuditChain({ em })).toMatchObject({ ok: true, events_checked: 3, head: { position: 3 } });
      // The triggers are back: an update is refused again.
      await expect(conn.execute(`update audit_events set reason = 'x'`)).rejects.toThrow(/append-only/);
    } finally {
      await orm.close(true);
      await db.drop();
    }
  });
});
