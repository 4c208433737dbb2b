import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = resolve(import.meta.dirname, '../../scripts/check-service-imports.mjs');
let dir: string;

function tree(files: Record<string, string>): string {
  dir = mkdtempSync(join(tmpdir(), 'service-imports-'));
  for (const [path, code] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), code);
  }
  return dir;
}

const check = (services: string) => spawnSync(process.execPath, [script, services], { encoding: 'utf8' });

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('scripts/check-service-imports.mjs', () => {
  it('passes when the folders import one way only', () => {
    const run = check(tree({ 'a/x.ts': "import { y } from '../b/y.js';\n", 'b/y.ts': "import type { C } from '../context.js';\nexport const y = 1;\n", 'context.ts': '' }));
    expect(run.status).toBe(0);
  });

  it('fails and names the circle when two folders import each other, type imports and import() included', () => {
    const run = check(
      tree({
        'a/x.ts': "import { y } from '../b/y.js';\n",
        'b/y.ts': "import type {\n  Z,\n} from '../c/z.js';\n",
        'c/z.ts': "const x = () => import('../a/x.js');\n",
      }),
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('a, b, c');
    expect(run.stderr).toContain('circle: a → b → c → a');
  });
});
