import { defineConfig } from 'vitest/config';

/**
 * `npm run test:reliability`: the whole reliability suite, the long variants in long/ included
 * (the root vitest.config.ts leaves long/ out of `npm test`).
 */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    pool: 'forks',
    // Bundles the CLI once, for the hundreds of CLI runs (test/setup/cli-bundle.ts).
    globalSetup: ['test/setup/cli-bundle.ts'],
    // One fast-check seed for every property without its own: fixed, or PROPERTY_SEED's (test/setup/property-seed.ts).
    setupFiles: ['test/setup/property-seed.ts'],
    dir: 'test/reliability',
    include: ['**/*.test.ts'],
    // One file at a time: the load tests measure the server, not a race with each other.
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 120_000,
    env: { NODE_ENV: 'test', TEST_SCRYPT_N: '1024' },
  },
});
