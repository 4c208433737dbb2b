import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './project-root.js';

/** This build's version, from package.json: `billing-admin --version`, `/healthz` and the start-up line show it. */
export const VERSION: string = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
