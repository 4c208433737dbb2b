import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { contractDefinition, contractDigest, OPENAPI_PATH, type ParsedContract } from '../../src/http/contract-document.js';

const root = resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'billing-contract-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the contract parsed at build time (scripts/write-contract.ts)', () => {
  const output = join(dir, 'openapi.json');
  execFileSync(join(root, 'node_modules/.bin/tsx'), ['scripts/write-contract.ts', output], { cwd: root, stdio: 'pipe' });
  const written = JSON.parse(readFileSync(output, 'utf8')) as ParsedContract;

  it('is openapi.yaml itself, with the digest of the YAML it came from', () => {
    const yaml = readFileSync(OPENAPI_PATH, 'utf8');
    expect(written.sha256).toBe(contractDigest(yaml));
    expect(written.document).toEqual(parse(yaml));
  });

  it('is what a server reads while it matches openapi.yaml, and the YAML file once either changed or is missing', () => {
    expect(contractDefinition(OPENAPI_PATH, output)).toEqual(written.document);

    const edited = join(dir, 'openapi.yaml');
    writeFileSync(edited, `${readFileSync(OPENAPI_PATH, 'utf8')}\n# edited after the build\n`);
    expect(contractDefinition(edited, output)).toBe(edited);

    expect(contractDefinition(OPENAPI_PATH, join(dir, 'absent.json'))).toBe(OPENAPI_PATH);
    writeFileSync(join(dir, 'torn.json'), '{"sha256":');
    expect(contractDefinition(OPENAPI_PATH, join(dir, 'torn.json'))).toBe(OPENAPI_PATH);
  });
});
