import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Native modules (better-sqlite3) are safest in child processes.
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    exclude: ['test/reliability/long/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    env: { NODE_ENV: 'test' },
  },
});
