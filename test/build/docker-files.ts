import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

/* The Dockerfile and compose.yaml read as Docker reads them, for the tests that run them by hand. */

const root = resolve(import.meta.dirname, '../..');

/** The Dockerfile's runtime CMD, as its JSON array. */
export function dockerCmd(): string[] {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const line = /^CMD (\[.*\])$/m.exec(dockerfile.slice(dockerfile.indexOf('AS runtime')));
  return JSON.parse(line![1]) as string[];
}

export interface ComposeService {
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
}

/** compose.yaml, its anchors and merge keys resolved (as docker compose reads it). */
export function composeServices(): Record<string, ComposeService> {
  return (parse(readFileSync(join(root, 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> }).services;
}

/** Compose's interpolation of ${NAME}, ${NAME:-default} and ${NAME:?message} from `env`. */
export function interpolate(text: string, env: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_m, name: string, kind?: string, rest?: string) => {
    const value = env[name];
    if (value) return value;
    if (kind === '?') throw new Error(`compose would refuse: ${rest}`);
    return kind === '-' ? (rest ?? '') : '';
  });
}
