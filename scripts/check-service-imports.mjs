#!/usr/bin/env node
// Fails when folders under src/services/ import each other, directly or round a longer circle:
// the folder-level import graph must be acyclic, so each folder can be read (and moved) with
// only the folders below it. Every import counts, `import type` and `import()` included.
// Usage: node scripts/check-service-imports.mjs [services-dir]   (exit 1 and the cycles if any)
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const servicesDir = resolve(root, process.argv[2] ?? 'src/services');

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|mts|js|mjs)$/.test(entry.name) && !entry.name.endsWith('.d.ts')) yield path;
  }
}

/** The folder directly under src/services/ that holds `file`, or null for a file outside any. */
function folderOf(file) {
  const parts = relative(servicesDir, file).split(sep);
  return parts.length > 1 && parts[0] !== '..' ? parts[0] : null;
}

const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm, // import … from '…', export … from '…'
  /^\s*import\s*['"]([^'"]+)['"]/gm, // import '…'
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g, // import('…')
];

/** folder → (imported folder → one example "file → file" line). */
const edges = new Map();
for (const file of sourceFiles(servicesDir)) {
  const from = folderOf(file);
  if (!from) continue;
  const code = readFileSync(file, 'utf8');
  for (const pattern of SPECIFIERS) {
    for (const [, specifier] of code.matchAll(pattern)) {
      if (!specifier.startsWith('.')) continue;
      const target = resolve(dirname(file), specifier);
      const to = folderOf(target);
      if (!to || to === from) continue;
      if (!edges.has(from)) edges.set(from, new Map());
      const out = edges.get(from);
      if (!out.has(to)) out.set(to, `${relative(root, file)} → ${relative(root, target).replace(/\.js$/, '.ts')}`);
    }
  }
}

// Tarjan's strongly connected components: each component of more than one folder is a cycle.
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
let counter = 0;
function visit(v) {
  index.set(v, counter);
  low.set(v, counter);
  counter += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of [...(edges.get(v)?.keys() ?? [])].sort()) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) components.push(component.sort());
  }
}
for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);

/** One shortest circle through `start` inside `members`, as a list of folders. */
function circleThrough(start, members) {
  const previous = new Map([[start, null]]);
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift();
    for (const w of [...(edges.get(v)?.keys() ?? [])].sort()) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        for (let p = previous.get(v); p !== null; p = previous.get(p)) path.unshift(p);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

if (components.length === 0) {
  console.log(`src/services folders: no import cycles (${edges.size} folders import others).`);
  process.exit(0);
}
console.error(`✖ src/services folders that import each other (${components.length} cycle${components.length > 1 ? 's' : ''}):`);
for (const component of components) {
  const members = new Set(component);
  console.error(`\n  ${component.join(', ')}`);
  // Every folder-to-folder import inside the component: each is a place to cut.
  for (const from of component) {
    for (const [to, example] of [...(edges.get(from) ?? [])].sort()) {
      if (members.has(to)) console.error(`    ${from} → ${to}   (e.g. ${example})`);
    }
  }
  console.error(`    circle: ${circleThrough(component[0], members).join(' → ')}`);
}
process.exit(1);
