import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import {
  acknowledged,
  buildScenario,
  compareWithModel,
  deliver,
  deliverUntilAcknowledged,
  existingLogIds,
  seedScenario,
} from '../helpers/reliability/notification-load.js';
import { pgChaos } from '../helpers/reliability/pg-chaos.js';
import { PRODUCTION_ENV } from '../helpers/reliability/scenarios.js';
import { API, baseEnv, call, startServerProcess } from '../helpers/reliability/server-process.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260118);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL connections cut during traffic', () => {
  it(`the webhook answers 503 rather than acknowledging what it did not save, and the server recovers without a restart (seed ${SEED})`, async () => {
    const db = await createTestDatabase('postgresql');
    const env = baseEnv(db.url);
    const scenario = buildScenario(SEED, 1200);
    await seedScenario(db.url, scenario);
    const user = { username: 'dora', password: 'dora has a long password' };
    expect((await runCli(['users', 'create', '--reason', 'test: audited change', '--username', user.username, '--password', user.password], env)).code).toBe(0);
    // Basic credentials are checked against the database on every request (no cache).
    const server = await startServerProcess({ databaseUrl: db.url, env: { ...PRODUCTION_ENV, MIGRATE_ON_START: 'false', BASIC_AUTH_CACHE_SECONDS: '0' } });
    const chaos = await pgChaos(db.url);
    try {
      let chaosOver = false;
      const sideStatuses: number[] = [];
      const sideTraffic = (async () => {
        while (!chaosOver) {
          for (const path of ['/plans/', '/auth/me/', '/payments/']) {
            try {
              sideStatuses.push((await call(server.url, 'GET', `${API}${path}`, { basic: user })).status);
            } catch {
              sideStatuses.push(-1);
            }
          }
        }
      })();
      const load = deliver([server.url], scenario.deliveries, { concurrency: 16 });
      const outage = (async () => {
        await sleep(1000);
        let cutter = chaos.keepCutting(200);
        await sleep(3000);
        let cut = await cutter.stop();
        await chaos.outage(2000);
        cutter = chaos.keepCutting(300);
        await sleep(2000);
        cut += await cutter.stop();
        return cut;
      })();
      const cut = await outage;
      chaosOver = true;
      const outcomes = await load;
      await sideTraffic;
      expect(cut, 'connections were really cut').toBeGreaterThan(0);
      expect(server.child.exitCode, server.output()).toBeNull();

      // During the outage: 2xx (saved) or 503 (retry), never a 500, never a dropped connection.
      const failed = outcomes.filter((o) => !acknowledged(o));
      expect(failed.length, 'some notifications met the outage').toBeGreaterThan(0);
      expect([...new Set(failed.map((o) => o.status))]).toEqual([503]);
      expect(sideStatuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(sideStatuses).toContain(503);
      const ids = outcomes.filter(acknowledged).map((o) => o.body!.webhook_log_id!);
      const found = await existingLogIds(db.url, ids);
      expect(ids.filter((id) => !found.has(id))).toEqual([]);

      // The database is back: the same process serves again, and the gateway's retries land.
      expect((await call(server.url, 'GET', `${API}/auth/me/`, { basic: user })).status).toBe(200);
      const retried = await deliverUntilAcknowledged([server.url], scenario.deliveries, outcomes, { rounds: 5 });
      expect(retried.unacknowledged).toEqual([]);
      const replay = await runCli(['webhooks', 'replay', '--reason', 'test: audited change', '--status', 'received,failed', '--json'], env);
      expect(replay.code, replay.stderr).toBe(0);
      const report = await compareWithModel(db.url, scenario);
      expect(report.mismatches).toEqual([]);
      const verify = await runCli(['wallet', 'verify', '--json'], env);
      expect(verify.code, verify.stderr).toBe(0);
    } finally {
      await chaos.close();
      await server.stop();
      await db.drop();
    }
  }, 240_000);
});
