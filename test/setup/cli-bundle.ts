import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';

const root = resolve(import.meta.dirname, '../..');

declare module 'vitest' {
  export interface ProvidedContext {
    /** The CLI bundled for this test run (see runCli), or '' to run the package's bin. */
    cliBundle: string;
  }
}

/**
 * Bundles `billing-admin` once per test run, as `npm run build` bundles the server (the render
 * worker a second entry beside it, packages external), so each of the suite's hundreds of CLI
 * runs starts plain JavaScript instead of compiling TypeScript through tsx: 0.8 s instead of
 * 1.25 s a run on the development machine. The bin itself (tsx) keeps its own test
 * (test/cli/foundation.test.ts). BILLING_TEST_CLI=bin runs the bin everywhere instead.
 */
export default async function setup(project: TestProject): Promise<() => void> {
  if (process.env.BILLING_TEST_CLI === 'bin') {
    project.provide('cliBundle', '');
    return () => {};
  }
  // Inside the project, so that the bundle's external packages resolve from node_modules; one
  // folder per run, so that two runs at once do not overwrite each other's bundle.
  const parent = join(root, 'node_modules/.cache');
  mkdirSync(parent, { recursive: true });
  const outdir = mkdtempSync(join(parent, 'billing-test-cli-'));
  await build({
    entryPoints: { 'billing-admin': join(root, 'cli/main.ts'), 'render-worker': join(root, 'src/services/documents/render-worker.ts') },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outdir,
    chunkNames: 'chunks/[name]-[hash]',
    logLevel: 'error',
  });
  project.provide('cliBundle', join(outdir, 'billing-admin.js'));
  return () => rmSync(outdir, { recursive: true, force: true });
}
