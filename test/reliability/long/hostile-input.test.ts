import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, DATABASES, type TestDatabase } from '../../helpers/database.js';
import { fuzzAll, startFuzzTarget, type FuzzTarget } from '../../helpers/reliability/fuzz.js';

const RUNS = Number(process.env.RELIABILITY_RUNS ?? 1000);
const SEEDS = (process.env.RELIABILITY_SEEDS ?? '101,202').split(',').map(Number);

describe.each(DATABASES)('hostile input, long: every operation of openapi.yaml (%s)', (kind) => {
  let db: TestDatabase;
  let target: FuzzTarget;
  beforeAll(async () => {
    db = await createTestDatabase(kind);
    target = await startFuzzTarget(db.url);
  });
  afterAll(async () => {
    await target?.server.stop();
    await db?.drop();
  });

  it.each(SEEDS)(`${RUNS} generated requests per operation, seed %i: no 5xx, documented statuses, valid bodies`, async (seed) => {
    const { findings } = await fuzzAll(target, RUNS, seed);
    expect(findings).toEqual({});
    expect(target.server.child.exitCode).toBeNull();
  }, 1_800_000);
});
