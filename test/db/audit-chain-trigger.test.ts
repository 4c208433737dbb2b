import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEvent } from '../../src/db/entities/audit-event.js';
import { migrateUp, migratorOf, openOrm, type Orm } from '../../src/db/orm.js';
import { chainedText, eventHash } from '../../src/services/audit/audit-chain.js';
import { recordAuditEvent } from '../../src/services/audit/record-audit-event.js';
import { verifyAuditChain } from '../../src/services/audit/verify-audit-chain.js';
import { createTestDatabase, DATABASES, type DatabaseKind, type TestDatabase } from '../helpers/database.js';

/*
 * docs/audit.md, 'Events the service did not append': a row inserted without a place in the
 * chain (by the previous release during a rolling upgrade, or by hand) is placed by the database
 * itself; on PostgreSQL it is hashed there with the service's own canonical text, on SQLite its
 * hash is taken when the chain is walked. Either way `audit verify` passes, and an edit or a
 * deletion afterwards is still found.
 */

interface Foreign {
  id?: string;
  occurredAt?: Date;
  actorName?: string;
  action?: string;
  targetId?: string;
  reason?: string | null;
  requestId?: string | null;
  changes: unknown;
}

/** Inserts an event as a release without the chain does: no chain_position, previous_hash or hash. */
async function insertForeign(kind: DatabaseKind, em: EntityManager, e: Foreign): Promise<string> {
  const id = e.id ?? randomUUID();
  const occurredAt = e.occurredAt ?? new Date();
  await em.execute(
    `insert into audit_events (id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, reason, request_id, changes) values (?, ?, 'cli', 'root', ?, ?, 'user', ?, ?, ?, ${kind === 'postgresql' ? '?::jsonb' : '?'})`,
    [id, kind === 'postgresql' ? occurredAt : occurredAt.getTime(), e.actorName ?? 'ops', e.action ?? 'user.create', e.targetId ?? id, e.reason ?? null, e.requestId ?? null, JSON.stringify(e.changes)],
  );
  return id;
}

const actor = { type: 'cli' as const, id: 'root', name: 'ops', requestId: 'billing-admin wallet adjust' };
const append = (em: EntityManager, n: number) => recordAuditEvent({ em: em.fork() }, actor, { action: 'wallet.adjust', target: { type: 'wallet', id: `w${n}` }, reason: `Ticket ${n}`, changes: { balance: ['0.00', `${n}.00`] } });

/** Values that are easy to serialize differently: escapes, unicode beyond the BMP, key order, numbers. */
const AWKWARD: Foreign[] = [
  { changes: {}, reason: null, requestId: null },
  { changes: { 'say "hi"': ['back\\slash', 'tab\there\nnew line\r\u0001\u001f\u007f\b\f'] }, reason: 'quote " and \\ and \u2028' },
  { changes: { b: [1, 2], a: [null, { z: 1, y: [true, false, null], '': 'empty key' }] }, actorName: 'Budi Santoso 😀', targetId: 'ñ/é/中文' },
  { changes: { '\uffff': [0, 1], '😀': [0, 1], '\ue000': [0, 1], Z: [0, 1], a: [0, 1], é: [0, 1] } },
  { changes: { n: [0.1, 0.30000000000000004], big: [12345678901234567890, 1e21], small: [1e-7, 1.5e-7], tiny: [0.000001, 5e-324], huge: [1.7976931348623157e308, -1e300], int: [-42, 100], frac: [123456789.125, -0.5], e15: [1e15, 123456789012345680] } },
  { changes: { nested: [{ deep: { deeper: { deepest: ['x', { k: 'v' }] } } }, []] }, requestId: 'POST /api/x?y=1' },
];

describe.each(DATABASES)('audit events inserted without a place in the chain (%s)', { timeout: 120_000 }, (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  const em = () => orm.em.fork() as EntityManager;
  const chain = () => em().find(AuditEvent, {}, { orderBy: { chainPosition: 'asc' } });

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    await migrateUp(orm);
  });
  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('places each one at the head, between the service\'s own appends, and audit verify passes; the next append follows it', async () => {
    await append(em(), 1);
    for (const e of AWKWARD) await insertForeign(kind, em(), e);
    await append(em(), 2);
    const events = await chain();
    expect(events.map((e) => e.chainPosition)).toEqual(events.map((_, i) => i + 1));
    expect(events.map((e) => e.action)).toEqual(['wallet.adjust', ...AWKWARD.map(() => 'user.create'), 'wallet.adjust']);
    const report = await verifyAuditChain({ em: em() });
    expect(report).toMatchObject({ ok: true, events_checked: AWKWARD.length + 2, broken: null });
    if (kind === 'postgresql') {
      // Hashed by the database itself, with the text and hash the service computes.
      const texts = await em().execute<{ id: string; text: string }[]>('select id::text as id, audit_event_chained_text(e) as text from audit_events e');
      for (const e of events) {
        expect(texts.find((t) => t.id === e.id)!.text, e.id).toBe(chainedText(e));
        expect(e.hash, e.id).toBe(eventHash(e));
      }
    } else {
      // No hash of its own: the append after it names the hash its content gives.
      expect(events.slice(1, -1).every((e) => e.hash === null && e.previousHash === null)).toBe(true);
    }
  });

  it.runIf(kind === 'postgresql')('hashes arbitrary JSON changes exactly as the service does (unicode, escapes, numbers, nesting)', async () => {
    // jsonb keeps no \u0000; everything else JSON can say goes.
    const json = fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.parse(JSON.stringify(v).replaceAll('\\u0000', '')));
    const text = fc.string({ unit: 'grapheme', maxLength: 20 }).map((s) => s.replaceAll('\u0000', ''));
    const samples = fc.sample(fc.record({ changes: fc.dictionary(text, json, { maxKeys: 5 }), reason: fc.option(text), actorName: text, targetId: text }), { numRuns: 150 });
    const ids: string[] = [];
    for (const s of samples) ids.push(await insertForeign(kind, em(), s));
    const rows = await em().find(AuditEvent, { id: { $in: ids } });
    const texts = await em().execute<{ id: string; text: string }[]>('select id::text as id, audit_event_chained_text(e) as text from audit_events e');
    for (const e of rows) {
      expect(texts.find((t) => t.id === e.id)!.text).toBe(chainedText(e));
      expect(e.hash).toBe(eventHash(e));
    }
    expect(await verifyAuditChain({ em: em() })).toMatchObject({ ok: true, broken: null });
  });

  it('two events in one INSERT statement (as a release writes several at once) get consecutive places', async () => {
    const [a, b] = [randomUUID(), randomUUID()];
    const at = kind === 'postgresql' ? new Date() : Date.now();
    const json = kind === 'postgresql' ? '?::jsonb' : '?';
    const row = `(?, ?, 'cli', 'root', 'ops', 'plan.create', 'plan', ?, null, null, ${json})`;
    await em().execute(
      `insert into audit_events (id, occurred_at, actor_type, actor_id, actor_name, action, target_type, target_id, reason, request_id, changes) values ${row}, ${row}`,
      [a, at, 'basic', JSON.stringify({ source: [null, 'plans.yaml'] }), b, at, 'pro', JSON.stringify({ source: [null, 'plans.yaml'] })],
    );
    const placed = await em().find(AuditEvent, { id: { $in: [a, b] } }, { orderBy: { chainPosition: 'asc' } });
    expect(placed[1].chainPosition).toBe(placed[0].chainPosition! + 1);
    expect(await verifyAuditChain({ em: em() })).toMatchObject({ ok: true, broken: null });
  });

  it('an event placed this way and edited afterwards is found; one deleted leaves a gap', async () => {
    const edited = await insertForeign(kind, em(), { changes: { balance: ['0.00', '10.00'] } });
    await append(em(), 3);
    const deleted = await insertForeign(kind, em(), { changes: { balance: ['10.00', '20.00'] } });
    await append(em(), 4);
    expect((await verifyAuditChain({ em: em() })).ok).toBe(true);

    await tamper(kind, em(), 'update audit_events set changes = ? where id = ?', [JSON.stringify({ balance: ['0.00', '99.00'] }), edited]);
    const afterEdit = await verifyAuditChain({ em: em() });
    expect(afterEdit.ok).toBe(false);
    // PostgreSQL: the row kept its own hash; SQLite: the event after it names the hash of what it said.
    expect(afterEdit.broken).toMatchObject(kind === 'postgresql' ? { event_id: edited, problem: 'content_changed' } : { problem: 'link_broken' });

    await tamper(kind, em(), 'update audit_events set changes = ? where id = ?', [JSON.stringify({ balance: ['0.00', '10.00'] }), edited]);
    expect((await verifyAuditChain({ em: em() })).ok).toBe(true);
    await tamper(kind, em(), 'delete from audit_events where id = ?', [deleted]);
    expect((await verifyAuditChain({ em: em() })).broken).toMatchObject({ problem: 'gap' });
  });
});

describe.each(DATABASES)('events an earlier rolling upgrade left outside the chain (%s)', { timeout: 120_000 }, (kind) => {
  let db: TestDatabase;
  let orm: Orm;
  afterAll(async () => {
    await orm?.close(true);
    await db?.drop();
  });

  it('are chained by the migration that makes the database place events, in the order they happened, and audit verify passes', async () => {
    db = await createTestDatabase(kind);
    orm = await openOrm(db.url, { create: true });
    // The schema as the release before this rule left it: the chain, but no trigger placing rows.
    await (await migratorOf(orm)).up({ to: 'Migration20261203080000' });
    const em = () => orm.em.fork() as EntityManager;
    await append(em(), 1);
    const late = await insertForeign(kind, em(), { changes: { username: [null, 'citra'] }, occurredAt: new Date(Date.now() + 2000) });
    const early = await insertForeign(kind, em(), { changes: { balance: ['5000.00', '3000.00'] }, occurredAt: new Date(Date.now() + 1000) });
    expect((await verifyAuditChain({ em: em() })).broken).toMatchObject({ problem: 'not_chained' });

    await migrateUp(orm);
    const events = await em().find(AuditEvent, {}, { orderBy: { chainPosition: 'asc' } });
    expect(events.map((e) => [e.chainPosition, e.action === 'wallet.adjust' ? 'append' : e.id])).toEqual([[1, 'append'], [2, early], [3, late]]);
    expect(await verifyAuditChain({ em: em() })).toMatchObject({ ok: true, events_checked: 3, broken: null });
  });
});

/** SQL run with the append-only triggers lifted, as only the table's owner (or a superuser) can. */
async function tamper(kind: DatabaseKind, em: EntityManager, sql: string, params: unknown[]): Promise<void> {
  await em.transactional(async (tx) => {
    const run = (q: string, p: unknown[] = []) => tx.getConnection().execute(q, p, 'run', tx.getTransactionContext());
    if (kind === 'postgresql') {
      await run('alter table audit_events disable trigger audit_events_no_update_or_delete');
      await run(sql.replace('changes = ?', 'changes = ?::jsonb'), params);
      await run('alter table audit_events enable trigger audit_events_no_update_or_delete');
      return;
    }
    const definitions = await tx.getConnection().execute<{ name: string; sql: string }[]>(
      "select name, sql from sqlite_master where type = 'trigger' and name in ('audit_events_no_update', 'audit_events_no_delete')",
      [],
      'all',
      tx.getTransactionContext(),
    );
    for (const d of definitions) await run(`drop trigger ${d.name}`);
    await run(sql, params);
    for (const d of definitions) await run(d.sql);
  });
}
