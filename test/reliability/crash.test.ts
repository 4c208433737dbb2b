import { describe, expect, it } from 'vitest';
import { IdempotencyRecord } from '../../src/db/entities/infrastructure.js';
import { openOrm } from '../../src/db/orm.js';
import { createTestDatabase, DATABASES } from '../helpers/database.js';
import { prepareDatabase } from '../helpers/reliability/accounts.js';
import { crashRun, expectCrashSafe } from '../helpers/reliability/scenarios.js';
import { API, call, startServerProcess } from '../helpers/reliability/server-process.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260116);

describe.each(DATABASES)('a server killed with SIGKILL under load (%s)', (kind) => {
  it(`loses no acknowledged notification and applies each exactly once after restart, resend and replay (seed ${SEED})`, async () => {
    const db = await createTestDatabase(kind);
    try {
      const run = await crashRun(db.url, { seed: SEED, total: 2000, killAfter: 700 });
      expect(run.killedWhileBusy, 'the kill landed while requests were in flight').toBe(true);
      expect(run.unansweredBeforeRestart, 'some notifications got no answer because of the crash').toBeGreaterThan(0);
      await expectCrashSafe(run);
    } finally {
      await db.drop();
    }
  }, 240_000);
});

describe.each(DATABASES)('a request with an Idempotency-Key in flight when the server dies (%s)', (kind) => {
  it('can be retried with the same key once its lease has run out, instead of 409 for 24 hours', async () => {
    const db = await createTestDatabase(kind);
    const { alice } = await prepareDatabase(db.url, ['alice']);
    const env = { GATEWAY_TIMEOUT_MS: '20000' };
    const body = { amount: 30000, payment_type: 'bank_transfer' };
    const headers = { 'idempotency-key': 'topup-2026-01-15-alice' };
    try {
      const first = await startServerProcess({ databaseUrl: db.url, env });
      // The gateway holds the charge; the process dies while the request waits for it.
      await call(first.url, 'POST', '/_simulator/faults', { body: { mode: 'timeout', count: 1, operations: ['charge'] } });
      const hanging = call(first.url, 'POST', `${API}/topups/`, { basic: alice, body, headers }).then((r) => r.status, () => 'no answer');
      await waitFor(async () => (await countRows(db.url, IdempotencyRecord)) === 1);
      await first.kill();
      expect(await hanging).toBe('no answer');

      const second = await startServerProcess({ databaseUrl: db.url, env });
      try {
        // Right away the key is still reserved: the first request might be running elsewhere.
        const early = await call(second.url, 'POST', `${API}/topups/`, { basic: alice, body, headers });
        expect(early.status).toBe(409);
        // Once the reservation is older than any request can take, the key is taken over.
        await ageIdempotencyRecords(db.url, 10 * 60 * 1000);
        const retry = await call(second.url, 'POST', `${API}/topups/`, { basic: alice, body, headers });
        expect(retry.status, retry.text).toBe(201);
        const replay = await call(second.url, 'POST', `${API}/topups/`, { basic: alice, body, headers });
        expect(replay.status).toBe(201);
        expect(replay.body.id).toBe(retry.body.id);
      } finally {
        await second.stop();
      }
    } finally {
      await db.drop();
    }
  }, 120_000);
});

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
}

async function countRows(databaseUrl: string, entity: typeof IdempotencyRecord): Promise<number> {
  const orm = await openOrm(databaseUrl);
  try {
    return await orm.em.fork().count(entity, {});
  } finally {
    await orm.close(true);
  }
}

/** Time passes for the reservations (the server runs on the real clock). */
async function ageIdempotencyRecords(databaseUrl: string, ms: number): Promise<void> {
  const orm = await openOrm(databaseUrl);
  try {
    for (const r of await orm.em.fork().find(IdempotencyRecord, {})) {
      await orm.em.fork().nativeUpdate(IdempotencyRecord, { id: r.id }, { createdAt: new Date(r.createdAt.getTime() - ms) });
    }
  } finally {
    await orm.close(true);
  }
}
