import { describe, it } from 'vitest';
import { createTestDatabase, DATABASES } from '../../helpers/database.js';
import { exactlyOnceRun, expectExactlyOnce } from '../../helpers/reliability/scenarios.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 31337);
const TOTAL = Number(process.env.RELIABILITY_NOTIFICATIONS ?? 20_000);

describe.each(DATABASES)('exactly-once under load, long (%s)', (kind) => {
  it(`${TOTAL} shuffled notifications, 30% duplicates, concurrency 32 (seed ${SEED})`, async () => {
    const db = await createTestDatabase(kind);
    try {
      await expectExactlyOnce(await exactlyOnceRun(db.url, { seed: SEED, total: TOTAL, processes: 1 }));
    } finally {
      await db.drop();
    }
  }, 3_600_000);
});

describe.skipIf(!process.env.TEST_DATABASE_URL)('two processes on one PostgreSQL, long', () => {
  it(`${TOTAL} notifications split over two server processes (seed ${SEED + 1})`, async () => {
    const db = await createTestDatabase('postgresql');
    try {
      await expectExactlyOnce(await exactlyOnceRun(db.url, { seed: SEED + 1, total: TOTAL, processes: 2 }));
    } finally {
      await db.drop();
    }
  }, 3_600_000);
});
