#!/usr/bin/env node
// The package's `bin`. In a checkout (the TypeScript sources and tsx, a development dependency,
// installed) it runs cli/main.ts through tsx, so a change needs no build; in a production install
// (`npm run build`, then `npm prune --omit=dev`: no tsx, maybe no sources) it runs the bundle,
// dist/cli.js, with plain node.
import { existsSync } from 'node:fs';

const source = new URL('./main.ts', import.meta.url);
let tsx = null;
if (existsSync(source)) {
  try {
    tsx = await import('tsx/esm/api');
  } catch {
    // no tsx: a production install
  }
}
if (tsx) {
  tsx.register();
  await import('./main.ts');
} else {
  const bundle = new URL('../dist/cli.js', import.meta.url);
  if (!existsSync(bundle)) {
    process.stderr.write('error: dist/cli.js is missing and tsx is not installed: run npm run build (or npm install for development)\n');
    process.exit(2);
  }
  await import(bundle.href);
}
