#!/usr/bin/env node
// Fails when a migration imports the application's code: a relative import that leaves the
// migrations folder (src/, cli/, …) or the package's own name. A migration must do tomorrow what
// it did the day it was written, so it carries what it needs (SQL, or a frozen copy under
// migrations/frozen/); packages (node:crypto, @mikro-orm/migrations) are not the application.
// Every import counts, `import type`, `export … from` and `import()` included.
// Usage: node scripts/check-migration-imports.mjs [migrations-dir]   (exit 1 and the imports if any)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const migrationsDir = resolve(root, process.argv[2] ?? 'migrations');
const ownName = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name;

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm, // import … from '…', export … from '…'
  /^\s*import\s*['"]([^'"]+)['"]/gm, // import '…'
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g, // import('…')
];

const inside = (path) => {
  const rel = relative(migrationsDir, path);
  return rel !== '..' && !rel.startsWith(`..${sep}`);
};

const found = [];
for (const file of sourceFiles(migrationsDir)) {
  const code = readFileSync(file, 'utf8');
  for (const pattern of SPECIFIERS) {
    for (const [, specifier] of code.matchAll(pattern)) {
      const own = specifier === ownName || specifier.startsWith(`${ownName}/`);
      const leaves = (specifier.startsWith('.') || specifier.startsWith('/')) && !inside(resolve(dirname(file), specifier));
      if (own || leaves) found.push(`${relative(root, file)} imports '${specifier}'`);
    }
  }
}

if (found.length > 0) {
  console.error('Migrations import the application\'s code (copy what they need under migrations/frozen/ instead):');
  for (const line of found) console.error(`  ${line}`);
  process.exit(1);
}
