import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const script = resolve(import.meta.dirname, '../../scripts/check-migration-imports.mjs');
let dir: string;

/** A project tree with a migrations folder; returns the migrations folder. */
function tree(files: Record<string, string>): string {
  dir = mkdtempSync(join(tmpdir(), 'migration-imports-'));
  for (const [path, code] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), code);
  }
  return join(dir, 'migrations');
}

const check = (migrations: string) => spawnSync(process.execPath, [script, migrations], { encoding: 'utf8' });

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('scripts/check-migration-imports.mjs', () => {
  it('passes when migrations import packages and each other only', () => {
    const run = check(
      tree({
        'migrations/postgresql/Migration1.ts': "import { Migration } from '@mikro-orm/migrations';\nimport { eventHash } from '../frozen/hash.js';\nimport { createHash } from 'node:crypto';\n",
        'migrations/frozen/hash.ts': "import { createHash } from 'node:crypto';\n",
      }),
    );
    expect(run.status, run.stderr).toBe(0);
  });

  it('fails and names each import of the application, type imports and import() included', () => {
    const run = check(
      tree({
        'migrations/sqlite/Migration1.ts': "import { eventHash } from '../../src/services/audit/audit-chain.js';\n",
        'migrations/sqlite/Migration2.ts': "import type {\n  Config,\n} from '../../src/config.js';\nconst later = () => import('../../cli/main.js');\n",
        'src/services/audit/audit-chain.ts': '',
      }),
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain("migrations/sqlite/Migration1.ts imports '../../src/services/audit/audit-chain.js'");
    expect(run.stderr).toContain("Migration2.ts imports '../../src/config.js'");
    expect(run.stderr).toContain("Migration2.ts imports '../../cli/main.js'");
  });

  it('passes on this repository\'s migrations', () => {
    expect(check(resolve(import.meta.dirname, '../../migrations')).status).toBe(0);
  });
});
