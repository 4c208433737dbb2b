import { afterAll, beforeAll, describe, it } from 'vitest';
import { DATABASES } from '../helpers/database.js';
import { startWorld, type World } from '../helpers/property/customer-world.js';
import { runCustomerSequences } from '../helpers/property/run-customer-sequences.js';

/*
 * Issue 14, "Done when" 2: random customer sequences (subscribe with each payment kind, pay or
 * leave unpaid, pay late, change plan up, down and across intervals, cancel both ways, refund in
 * full or in part here and at the gateway, top up, staff credits, billing runs at random times)
 * against the real server over HTTP with the simulator; after every step the money rules hold
 * (test/helpers/property/customer-world.ts, checkMoneyRules). 300 short sequences per database,
 * always the same ones (seed 14); test/reliability/long/ runs more, longer ones, with a new seed.
 */
describe.each(DATABASES)('customer sequences on %s', (kind) => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld(kind);
  });
  afterAll(() => world?.stop());

  it('300 sequences keep every money rule after every step', { timeout: 600_000 }, async () => {
    await runCustomerSequences(world, { numRuns: Number(process.env.PROPERTY_RUNS ?? 300), maxCommands: 8, seed: 14 });
  });
});
