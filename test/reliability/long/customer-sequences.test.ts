import { afterAll, beforeAll, describe, it } from 'vitest';
import { DATABASES } from '../../helpers/database.js';
import { startWorld, type World } from '../../helpers/property/customer-world.js';
import { runCustomerSequences } from '../../helpers/property/run-customer-sequences.js';

/*
 * The long variant of test/property/customer-sequences.test.ts: more and longer customer
 * sequences, with a new seed each time (printed; PROPERTY_SEED replays one) and shrinking on,
 * so a counterexample comes back as its shortest form.
 */
const RUNS = Number(process.env.PROPERTY_RUNS ?? 1000);
const SEED = Number(process.env.PROPERTY_SEED ?? Date.now() % 2 ** 31);

describe.each(DATABASES)('customer sequences, long (%s)', (kind) => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld(kind);
  });
  afterAll(() => world?.stop());

  it(`${RUNS} sequences of up to 20 moves keep every money rule (seed ${SEED})`, async () => {
    await runCustomerSequences(world, { numRuns: RUNS, maxCommands: 20, seed: SEED, shrink: process.env.PROPERTY_SHRINK !== '0' });
  }, 3_600_000);
});
