import { describe, it } from 'vitest';
import { createTestDatabase, DATABASES } from '../helpers/database.js';
import { exactlyOnceRun, expectExactlyOnce } from '../helpers/reliability/scenarios.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260115);

describe.each(DATABASES)('exactly-once under load (%s)', (kind) => {
  it(`2,000 shuffled notifications, 30% duplicates, concurrency 32, end in the reference model's state (seed ${SEED})`, async () => {
    const db = await createTestDatabase(kind);
    try {
      await expectExactlyOnce(await exactlyOnceRun(db.url, { seed: SEED, total: 2000, processes: 1 }));
    } finally {
      await db.drop();
    }
  }, 180_000);
});
