import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The README is the front door: what the service is, a quick start, integrating from a backend,
 * running in production and a map of docs/. Everything else lives in docs/, so the README stays
 * short enough to read (12 KB at most), and every link between them has to lead somewhere.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const README_LIMIT = 12 * 1024;

const documents = (): string[] => [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
  ...(existsSync(join(ROOT, 'examples/backend/README.md')) ? ['examples/backend/README.md'] : []),
];

/** The text outside fenced code blocks, line by line (a `# comment` in a shell block is no heading). */
function proseLines(text: string): string[] {
  const lines: string[] = [];
  let fence = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) {
      fence = !fence;
      continue;
    }
    if (!fence) lines.push(line);
  }
  return lines;
}

/** The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every link target written as `[text](target)` or `![alt](target)` outside code blocks and inline code. */
function linksOf(text: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(text)) {
    const prose = line.replace(/`[^`]*`/g, '');
    for (const m of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) targets.push(m[1]);
  }
  return targets;
}

describe('the README and docs/', () => {
  it(`the README is at most ${README_LIMIT} bytes`, () => {
    const size = statSync(join(ROOT, 'README.md')).size;
    expect(size, `README.md is ${size} bytes; move detail to docs/`).toBeLessThanOrEqual(README_LIMIT);
  });

  it('every relative link leads to a file that exists, and every #anchor to a heading in it', () => {
    const broken: string[] = [];
    for (const file of documents()) {
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const target of linksOf(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [pathPart, anchor] = target.split('#', 2);
        const resolved = pathPart === '' ? file : relative(ROOT, join(ROOT, dirname(file), decodeURIComponent(pathPart)));
        const absolute = join(ROOT, resolved);
        if (!existsSync(absolute)) {
          broken.push(`${file}: ${target} (no ${resolved})`);
          continue;
        }
        if (anchor !== undefined && resolved.endsWith('.md')) {
          if (!anchorsOf(readFileSync(absolute, 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README maps every document in docs/', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const unmapped = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .filter((f) => !readme.includes(`(docs/${f})`));
    expect(unmapped).toEqual([]);
  });
});
