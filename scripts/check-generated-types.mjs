// Fails when src/http/generated/openapi.ts is not what openapi-typescript makes of openapi.yaml.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The generator's options live in one place, the gen:types script; only its output path changes here.
const genArgs = JSON.parse(readFileSync('package.json', 'utf8')).scripts['gen:types'].split(/\s+/);
const dir = mkdtempSync(join(tmpdir(), 'openapi-types-'));
const fresh = join(dir, 'openapi.ts');
try {
  const args = genArgs.map((arg, i) => (genArgs[i - 1] === '-o' ? fresh : arg));
  execFileSync('npx', args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const committed = readFileSync('src/http/generated/openapi.ts', 'utf8');
  if (readFileSync(fresh, 'utf8') !== committed) {
    console.error('src/http/generated/openapi.ts is stale: run `npm run gen:types` and commit the result.');
    process.exit(1);
  }
  console.log('Generated types are current.');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
