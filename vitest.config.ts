import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Native modules (better-sqlite3) are safest in child processes.
    pool: 'forks',
    // Bundles the CLI once, for the hundreds of CLI runs (test/setup/cli-bundle.ts).
    globalSetup: ['test/setup/cli-bundle.ts'],
    include: ['test/**/*.test.ts'],
    exclude: ['test/reliability/long/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
  },
});
