import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import type { Operation } from '../helpers/reliability/contract.js';
import { fuzzOperation, startFuzzTarget, type FuzzTarget } from '../helpers/reliability/fuzz.js';
import { pgChaos } from '../helpers/reliability/pg-chaos.js';
import { API, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';
import { StatusLog } from '../helpers/reliability/status-log.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20261123);
const RUNS = Number(process.env.STATUS_WALK_RUNS ?? 15);
const MAX_BODY_BYTES = 4096;

const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

/*
 * docs/api.md promises that every status the server answers is documented. This walks every
 * operation of openapi.yaml through the answers that come from outside its handler (wrong or
 * malformed credentials, the failed-login throttle, bodies too large or not JSON, a database
 * that is down) and a share of generated requests, logs every answer, and fails on any status,
 * content type or body the operation does not document.
 */
describe.each(DATABASES)('every status the server answers is documented for its operation (%s)', (kind) => {
  let db: TestDatabase;
  let target: FuzzTarget;
  let log: StatusLog;
  let operations: Operation[];
  const extra: ServerProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase(kind);
    target = await startFuzzTarget(db.url, { MAX_BODY_BYTES: String(MAX_BODY_BYTES) });
    log = new StatusLog(target.contract);
    operations = target.contract.operations;
  });
  afterAll(async () => {
    for (const s of extra) await s.stop();
    // Both processes startFuzzTarget started: the strict one was left running after every CI run.
    await target?.server.stop();
    await target?.strict.stop();
    await db?.drop();
  });

  /** The operation's URL with real path values (a resource id of the user's, a plan slug). */
  const urlOf = (server: ServerProcess, op: Operation) =>
    `${server.url}${op.base ?? API}${op.path.replace(/\{(\w+)\}/g, (_, name: string) => target.context.pathValues[name][0])}`;
  /** The fuzz user's credentials; on a staff route, the staff user's (a customer finds no staff route). */
  const own = (op?: Operation) => {
    const who = op?.staff && target.context.staffCredentials ? target.context.staffCredentials : target.context.credentials;
    return basic(who.username, who.password);
  };
  const send = (server: ServerProcess, op: Operation, label: string, headers: Record<string, string>, body?: string) =>
    log.fetch(op, urlOf(server, op), { method: op.method, headers, body }, `${op.method} ${op.path} ${label}`);
  const jsonBody = (op: Operation) => (op.method === 'POST' ? '{}' : undefined);
  // Paths outside the API mount (/metrics, the probes) answer before authentication: logged and
  // judged like every answer, but not expected to answer 401, 429 or 503.

  it('generated requests on every operation', async () => {
    expect(operations.length).toBeGreaterThanOrEqual(31);
    for (const op of operations) await fuzzOperation(target, op, RUNS, SEED, 'all', log);
    expect(log.undocumented()).toEqual({});
  }, 600_000);

  it('wrong or malformed credentials answer 401 on every operation, public ones included', async () => {
    for (const op of operations) {
      const wrong = await send(target.server, op, '[wrong password]', { authorization: basic('nobody-at-all', 'wrong'), 'content-type': 'application/json' }, jsonBody(op));
      const malformed = await send(target.server, op, '[malformed Authorization]', { authorization: 'Basic !!!', 'content-type': 'application/json' }, jsonBody(op));
      if (op.base === null) expect([wrong.status, malformed.status], op.id).toEqual([401, 401]);
    }
    expect(log.undocumented()).toEqual({});
  });

  it('every POST answers 413 to a body too large, 415 to a body that is not JSON and 400 to broken JSON, body-less ones included', async () => {
    const posts = operations.filter((op) => op.method === 'POST');
    expect(posts.map((op) => op.id)).toEqual(expect.arrayContaining(['pauseSubscription', 'resumeSubscription', 'markNotificationRead']));
    for (const op of posts) {
      const headers = { authorization: own(op), 'content-type': 'application/json' };
      const large = await send(target.server, op, '[large body]', headers, JSON.stringify({ x: 'y'.repeat(MAX_BODY_BYTES) }));
      expect(large.status, op.id).toBe(413);
      if (op.id !== 'receiveGatewayNotification') {
        // The webhook logs whatever arrives (its contract says so); everything else wants JSON.
        const text = await send(target.server, op, '[text/plain body]', { ...headers, 'content-type': 'text/plain' }, 'a=1');
        expect(text.status, op.id).toBe(415);
      }
      const broken = await send(target.server, op, '[broken JSON]', headers, '{');
      expect(broken.status, op.id).toBe(400);
    }
    expect(log.undocumented()).toEqual({});
  });

  // It starts a server process of its own (up to 60 s on a busy machine) before its ~90 requests.
  it('after failed logins every Basic request answers 429, GET /plans/ included', { timeout: 180_000 }, async () => {
    const throttled = await startServerProcess({ databaseUrl: db.url, env: { LOGIN_THROTTLE_LIMIT: '2' } });
    extra.push(throttled);
    const { username } = target.context.credentials;
    const first = operations.find((op) => op.id === 'getCurrentUser')!;
    for (let i = 0; i < 3; i++) await send(throttled, first, '[wrong password]', { authorization: basic(username, `wrong-${i}`) });
    for (const op of operations) {
      const answer = await send(throttled, op, '[throttled user]', { authorization: own(), 'content-type': 'application/json' }, jsonBody(op));
      if (op.base === null) expect(answer.status, op.id).toBe(429);
    }
    expect(log.undocumented()).toEqual({});
  });

  it.skipIf(kind !== 'postgresql')('a database that is down answers 503 on every operation', async () => {
    const chaos = await pgChaos(db.url);
    try {
      await chaos.refuse();
      for (const op of operations) {
        const answer = await send(target.server, op, '[database down]', { authorization: own(op), 'content-type': 'application/json' }, jsonBody(op));
        if (op.base === null) expect(answer.status, op.id).toBe(503);
      }
    } finally {
      await chaos.allow();
      await chaos.close();
    }
    expect(log.undocumented()).toEqual({});
  });
});
