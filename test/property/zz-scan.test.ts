import { afterAll, beforeAll, it } from 'vitest';
import { startWorld, type World } from '../helpers/property/customer-world.js';
import { runCustomerSequences } from '../helpers/property/run-customer-sequences.js';
let world: World;
beforeAll(async () => { world = await startWorld('sqlite'); });
afterAll(() => world?.stop());
it('scan', { timeout: 3_000_000 }, async () => {
  for (let seed = 1; seed <= Number(process.env.SCAN_SEEDS ?? 12); seed++) {
    try {
      await runCustomerSequences(world, { numRuns: 60, maxCommands: 8, seed });
      process.stdout.write(`SCAN seed ${seed}: no counterexample\n`);
    } catch (e) {
      const lines = (e as Error).message.split('\n');
      process.stdout.write(`SCAN seed ${seed}:\n${lines.slice(0, lines.indexOf('trace of the failing sequence:')).join('\n')}\n`);
    }
  }
});
