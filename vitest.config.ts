import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Native modules (better-sqlite3) are safest in child processes.
    pool: 'forks',
    // Two test files at once even on two cores (vitest's default there is one): most of a test's
    // time is spent waiting on the CLI's processes, the databases, the simulator and Chromium.
    // The whole suite took 31 minutes this way on the two-core development machine, against
    // 58 minutes of test time added up file by file.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Bundles the CLI once, for the hundreds of CLI runs (test/setup/cli-bundle.ts).
    globalSetup: ['test/setup/cli-bundle.ts'],
    // One fast-check seed for every property without its own: fixed, or PROPERTY_SEED's (test/setup/property-seed.ts).
    setupFiles: ['test/setup/property-seed.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/reliability/long/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Cheap password hashes for the thousands of users the tests make (src/services/users/passwords.ts).
    env: { NODE_ENV: 'test', TEST_SCRYPT_N: '1024' },
  },
});
