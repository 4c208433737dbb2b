import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory holding package.json and openapi.yaml, found by walking up from this module,
 * so it is right both from src/ (tsx) and from the bundled dist/main.js.
 */
function findProjectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'openapi.yaml')) || !existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the project root (openapi.yaml beside package.json)');
    dir = parent;
  }
  return dir;
}

export const PROJECT_ROOT = findProjectRoot();
