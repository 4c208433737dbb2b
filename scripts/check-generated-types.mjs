// Fails when src/http/generated/openapi.ts is not what openapi-typescript makes of openapi.yaml.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dir = mkdtempSync(join(tmpdir(), 'openapi-types-'));
const fresh = join(dir, 'openapi.ts');
try {
  execFileSync('npx', ['openapi-typescript', 'openapi.yaml', '-o', fresh], { stdio: ['ignore', 'ignore', 'inherit'] });
  const committed = readFileSync('src/http/generated/openapi.ts', 'utf8');
  if (readFileSync(fresh, 'utf8') !== committed) {
    console.error('src/http/generated/openapi.ts is stale: run `npm run gen:types` and commit the result.');
    process.exit(1);
  }
  console.log('Generated types are current.');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
