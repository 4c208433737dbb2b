import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase, DATABASES } from '../helpers/database.js';
import { crashRun } from '../helpers/reliability/scenarios.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260116);

describe.each(DATABASES)('a server killed with SIGKILL under load (%s)', (kind) => {
  it(`loses no acknowledged notification and applies each exactly once after restart, resend and replay (seed ${SEED})`, async () => {
    const db = await createTestDatabase(kind);
    try {
      const run = await crashRun(db.url, { seed: SEED, total: 2000, killAfter: 700 });
      expect(run.killedWhileBusy, 'the kill landed while requests were in flight').toBe(true);
      expect(run.unansweredBeforeRestart, 'some notifications got no answer because of the crash').toBeGreaterThan(0);
      // Every webhook_log_id the server acknowledged with a 2xx before dying is in the database.
      expect(run.acknowledgedLogsMissing).toEqual([]);
      expect(run.replay.code, run.replay.stderr).toBe(0);
      expect(run.report.mismatches).toEqual([]);
      const verify = await runCli(['wallet', 'verify', '--json'], run.env);
      expect(verify.code, verify.stderr).toBe(0);
    } finally {
      await db.drop();
    }
  }, 240_000);
});
