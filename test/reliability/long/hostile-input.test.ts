import { describe, expect, it } from 'vitest';
import { DATABASES } from '../../helpers/database.js';
import { ATTACKER_CLASSES, fuzzAll, fuzzConcurrency, fuzzPathVariants, groupFindings, fuzzTargetForBlock } from '../../helpers/reliability/fuzz.js';

const RUNS = Number(process.env.RELIABILITY_RUNS ?? 1000);
const SEEDS = (process.env.RELIABILITY_SEEDS ?? '101,202').split(',').map(Number);
const CLASS_RUNS = Number(process.env.RELIABILITY_CLASS_RUNS ?? 300);
const VARIANT_RUNS = Number(process.env.RELIABILITY_VARIANT_RUNS ?? 60);
const BURSTS = Number(process.env.RELIABILITY_BURSTS ?? 10);

describe.each(DATABASES)('hostile input, long: every operation of openapi.yaml (%s)', (kind) => {
  const target = fuzzTargetForBlock(kind);

  it.each(SEEDS)(`${RUNS} generated requests per operation, seed %i: no 5xx, documented statuses, valid bodies`, async (seed) => {
    const { findings } = await fuzzAll(target, RUNS, seed);
    expect(findings).toEqual({});
    expect(target.server.child.exitCode).toBeNull();
  }, 1_800_000);

  // The attacker's classes of issue 16, at length.
  it.each(SEEDS)(`${CLASS_RUNS} deep or invalid-text bodies per operation, seed %i`, async (seed) => {
    const { findings } = await fuzzAll(target, CLASS_RUNS, seed, 4, ATTACKER_CLASSES);
    expect(findings).toEqual({});
  }, 1_800_000);

  it.each(SEEDS)(`${VARIANT_RUNS} path variants per GET route and the protected prefixes, seed %i`, async (seed) => {
    expect(groupFindings(await fuzzPathVariants(target, VARIANT_RUNS, seed))).toEqual({});
  }, 1_800_000);

  it.each(SEEDS)(`${BURSTS} bursts of the same request N times at once, seed %i`, async (seed) => {
    expect(groupFindings(await fuzzConcurrency(target, BURSTS, seed))).toEqual({});
    expect(target.strict.child.exitCode).toBeNull();
  }, 1_800_000);
});
