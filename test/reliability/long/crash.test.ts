import { describe, it } from 'vitest';
import { createTestDatabase, DATABASES } from '../../helpers/database.js';
import { crashRun, expectCrashSafe } from '../../helpers/reliability/scenarios.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 4242);
const TOTAL = Number(process.env.RELIABILITY_NOTIFICATIONS ?? 20_000);

describe.each(DATABASES)('SIGKILL under load, long (%s)', (kind) => {
  it.each([0.1, 0.5, 0.9])(`${TOTAL} notifications, killed after %f of the answers (seed ${SEED})`, async (fraction) => {
    const db = await createTestDatabase(kind);
    try {
      await expectCrashSafe(await crashRun(db.url, { seed: SEED, total: TOTAL, killAfter: Math.round(TOTAL * fraction) }));
    } finally {
      await db.drop();
    }
  }, 3_600_000);
});
