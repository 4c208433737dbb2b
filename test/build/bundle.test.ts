import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

/** `npm run build`'s own esbuild command line, writing to `outdir` instead of dist/. */
function buildInto(outdir: string): void {
  const script: string = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.build;
  // The esbuild step; the contract parsed at build time (scripts/write-contract.ts) follows it.
  const [command, ...args] = script.split(' && ')[0].split(/\s+/);
  expect(command).toBe('esbuild');
  const outArgs = args.map((a) => (a.startsWith('--outdir=') ? `--outdir=${outdir}` : a));
  expect(outArgs).toContain(`--outdir=${outdir}`);
  execFileSync(join(root, 'node_modules/.bin/esbuild'), [...outArgs, '--log-level=error'], { cwd: root, stdio: 'pipe' });
}

/** The files a bundle's file imports statically (`import … from "./x.js"`, `import "./x.js"`, `export … from`), not `import()`. */
function staticImports(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  const specifiers = [
    ...code.matchAll(/^\s*(?:import|export)\b[^;'"]*?\bfrom\s*["']([^"']+)["']/gm),
    ...code.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
  ].map((m) => m[1]);
  return specifiers.filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s));
}

/** The files a bundle's file loads on demand (`import("./x.js")`). */
function dynamicImports(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  return [...code.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]).filter((s) => s.startsWith('.')).map((s) => resolve(dirname(file), s));
}

/** Every bundle file reached from `entry` by static imports alone. */
function staticGraph(entry: string): string[] {
  const seen = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    for (const next of staticImports(queue.pop()!)) {
      if (!seen.has(next)) {
        seen.add(next);
        queue.push(next);
      }
    }
  }
  return [...seen];
}

/** The source files bundled into a bundle file, from its source map. */
function sourcesOf(file: string): string[] {
  const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
  return map.sources.map((s) => relative(root, resolve(dirname(file), s)));
}

describe('the production bundle (npm run build)', () => {
  let outdir: string;

  beforeAll(() => {
    outdir = mkdtempSync(join(tmpdir(), 'billing-bundle-'));
    buildInto(outdir);
  }, 120_000);

  afterAll(() => rmSync(outdir, { recursive: true, force: true }));

  it('does not load the gateway simulator when it starts: only a dynamic import() reaches it', () => {
    const main = join(outdir, 'main.js');
    expect(existsSync(main)).toBe(true);
    const graph = staticGraph(main);
    const loaded = graph.flatMap(sourcesOf);
    expect(loaded).toContain('src/app.ts');
    expect(loaded.filter((s) => s.startsWith('src/simulator/'))).toEqual([]);

    // Still in the build, for a non-production server with no gateway URL: behind an import().
    const lazy = graph.flatMap(dynamicImports).flatMap(staticGraph).flatMap(sourcesOf);
    expect(lazy.some((s) => s.startsWith('src/simulator/'))).toBe(true);
  });

  it('has the PDF render worker as an entry of its own beside main.js, loading the template and not the database', () => {
    const worker = join(outdir, 'render-worker.js');
    expect(existsSync(worker)).toBe(true);
    const loaded = staticGraph(worker).flatMap(sourcesOf);
    expect(loaded).toContain('src/services/documents/template.ts');
    expect(loaded.filter((s) => s.startsWith('src/db/') || s === 'src/app.ts')).toEqual([]);
  });
});
