import { describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES } from '../helpers/database.js';
import { crashRun, expectCrashSafe } from '../helpers/reliability/scenarios.js';

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
