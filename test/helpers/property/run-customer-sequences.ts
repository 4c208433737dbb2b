import fc from 'fast-check';
import { customerCommands, openingMoves, type Model } from './customer-commands.js';
import { newCustomer, retireCustomer, verifyAllWallets, type Customer, type World } from './customer-world.js';

export interface SequenceOptions {
  numRuns: number;
  maxCommands: number;
  /** Fixed for `npm test` (the same sequences every time); PROPERTY_SEED overrides. */
  seed: number;
  /** Shrink a counterexample to its shortest form (slower); PROPERTY_SHRINK=1 turns it on. */
  shrink?: boolean;
  /** `billing-admin wallet verify` over all wallets every this many sequences, and at the end. */
  verifyEvery?: number;
}

/**
 * Runs `numRuns` random customer sequences against the world's server, each with a fresh user,
 * and fails with the seed, the counterexample (its commands) and the trace of what the service
 * answered. Replay one with PROPERTY_SEED=<seed> (and fast-check's `path`, printed too).
 */
export async function runCustomerSequences(world: World, options: SequenceOptions): Promise<void> {
  const seed = process.env.PROPERTY_SEED ? Number(process.env.PROPERTY_SEED) : options.seed;
  const path = process.env.PROPERTY_PATH || undefined;
  const shrink = options.shrink ?? process.env.PROPERTY_SHRINK === '1';
  const verifyEvery = options.verifyEvery ?? 25;
  let done = 0;
  let lastTrace: string[] = [];
  const property = fc.asyncProperty(openingMoves, fc.commands(customerCommands, { maxCommands: options.maxCommands, replayPath: process.env.PROPERTY_REPLAY || undefined }), async (opening, cmds) => {
    const customer = await newCustomer(world);
    try {
      for (const move of opening) await move.run({} as Model, customer);
      await fc.asyncModelRun(() => ({ model: {} as Model, real: customer }), cmds);
    } catch (err) {
      lastTrace = customer.trace;
      throw err;
    } finally {
      await retireCustomer(customer);
      if (process.env.PROPERTY_TRACE === '1') process.stdout.write(`--- sequence ${world.sequences}\n${customer.trace.join('\n')}\n`);
    }
    done += 1;
    if (done % verifyEvery === 0) {
      const wrong = await verifyAllWallets(world);
      if (wrong.length > 0) throw new Error(`billing-admin wallet verify fails:\n${wrong.join('\n')}`);
    }
  });
  const details = await fc.check(property, { numRuns: options.numRuns, seed, path, endOnFailure: !shrink });
  if (details.failed) {
    const message = [
      `customer sequences on ${world.kind}: counterexample after ${details.numRuns} run(s) (seed ${details.seed}, path "${details.counterexamplePath}")`,
      `opening: ${details.counterexample ? details.counterexample[0].map(String).join(', ') : '(none)'}`,
      `commands: ${details.counterexample ? String(details.counterexample[1]) : '(none)'}`,
      `error: ${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)}`,
      'trace of the failing sequence:',
      ...lastTrace,
      `replay: PROPERTY_SEED=${details.seed} PROPERTY_PATH="${details.counterexamplePath}" PROPERTY_REPLAY="<the replayPath printed after the commands>"`,
    ].join('\n');
    throw new Error(message);
  }
  const wrong = await verifyAllWallets(world);
  if (wrong.length > 0) throw new Error(`billing-admin wallet verify fails:\n${wrong.join('\n')}`);
}

/**
 * Runs one fixed list of moves as a fresh customer, with the same checks after every move: the
 * issue's reported cases, kept as named sequences beside the random ones.
 */
export async function runMoves(world: World, moves: { run(m: Model, c: Customer): Promise<void>; toString(): string }[]): Promise<void> {
  const customer = await newCustomer(world);
  try {
    for (const move of moves) await move.run({} as Model, customer);
  } catch (err) {
    throw new Error(`${(err as Error).message}\nmoves: ${moves.map(String).join(', ')}\ntrace:\n${customer.trace.join('\n')}`);
  } finally {
    await retireCustomer(customer);
  }
}
