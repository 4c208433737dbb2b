import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { fuzzAll, startFuzzTarget, type FuzzTarget } from '../helpers/reliability/fuzz.js';

const SEED = Number(process.env.RELIABILITY_SEED ?? 20260119);
const RUNS = Number(process.env.RELIABILITY_RUNS ?? 200);

// SQLite only here (npm test's share); test/reliability/long/ runs more on both databases.
describe('hostile input on every operation of openapi.yaml (sqlite)', () => {
  let db: TestDatabase;
  let target: FuzzTarget;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    target = await startFuzzTarget(db.url);
  });
  afterAll(async () => {
    await target?.server.stop();
    await db?.drop();
  });

  it(`${RUNS} generated requests per operation: no 5xx, every status documented, every body valid (seed ${SEED})`, async () => {
    expect(target.contract.operations.length).toBeGreaterThanOrEqual(31);
    const { findings } = await fuzzAll(target, RUNS, SEED);
    expect(findings).toEqual({});
    expect(target.server.child.exitCode).toBeNull();
  }, 600_000);
});
