// Writes dist/openapi.json: openapi.yaml parsed once at build time, by the same parser
// openapi-backend uses, with the SHA-256 of the YAML it came from. A production server reads it
// instead of parsing the YAML at each start (src/http/contract-document.ts).
// Usage (npm run build runs it): tsx scripts/write-contract.ts [OUTPUT]   (default dist/openapi.json)
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { contractDigest, OPENAPI_PATH, PARSED_CONTRACT_PATH, type ParsedContract } from '../src/http/contract-document.js';

// openapi-backend's own copy of the parser, so the document is the one it would have parsed.
const fromBackend = createRequire(createRequire(import.meta.url).resolve('openapi-backend'));
const { parse } = fromBackend('@apidevtools/json-schema-ref-parser') as { parse(path: string): Promise<ParsedContract['document']> };

/** JSON keeps strings, numbers, booleans, null, arrays and plain objects; a YAML timestamp or binary would come back changed. */
function assertPlainJson(value: unknown, at: string): void {
  if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) return;
  if (Array.isArray(value)) return value.forEach((v, i) => assertPlainJson(v, `${at}/${i}`));
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [k, v] of Object.entries(value)) assertPlainJson(v, `${at}/${k}`);
    return;
  }
  throw new Error(`openapi.yaml ${at || '/'} is no plain JSON value (${Object.prototype.toString.call(value)}): quote it`);
}

const yaml = readFileSync(OPENAPI_PATH, 'utf8');
const document = await parse(OPENAPI_PATH);
assertPlainJson(document, '');
const output = process.argv[2] ?? PARSED_CONTRACT_PATH;
mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, JSON.stringify({ sha256: contractDigest(yaml), document } satisfies ParsedContract));
