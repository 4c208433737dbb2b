import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Document } from 'openapi-backend';
import { PROJECT_ROOT } from '../project-root.js';

/** The contract, the authority for every request and response (tests validate against this file). */
export const OPENAPI_PATH = join(PROJECT_ROOT, 'openapi.yaml');

/**
 * The contract already parsed, written by `npm run build` beside the bundle
 * (scripts/write-contract.ts): parsing the YAML was the largest part of reading the contract at
 * each start, and openapi-backend's quick mode parsed the file twice.
 */
export const PARSED_CONTRACT_PATH = join(PROJECT_ROOT, 'dist', 'openapi.json');

export interface ParsedContract {
  /** SHA-256 of the openapi.yaml it was parsed from. */
  sha256: string;
  document: Document;
}

export function contractDigest(yamlText: string): string {
  return createHash('sha256').update(yamlText).digest('hex');
}

/**
 * What openapi-backend is given as its definition: the parsed contract when the build wrote it
 * from this very openapi.yaml, otherwise the YAML file's path (a tree without a build, or a
 * contract edited since the build), which openapi-backend parses itself.
 */
export function contractDefinition(yamlPath = OPENAPI_PATH, parsedPath = PARSED_CONTRACT_PATH): Document | string {
  let parsed: ParsedContract;
  try {
    parsed = JSON.parse(readFileSync(parsedPath, 'utf8')) as ParsedContract;
  } catch {
    return yamlPath;
  }
  return parsed.sha256 === contractDigest(readFileSync(yamlPath, 'utf8')) ? parsed.document : yamlPath;
}
