import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/*
 * The project stands alone: its users have the repository and nothing beside it. No file may
 * send them to notes kept outside it (the design notes, the gateway and tax research, the style
 * and stack notes, the original brief, or any path into the folder next to the repository).
 * A rule a reader needs is said where it is used, or in docs/, and comments point there.
 *
 * The names are assembled from pieces so that this file does not match itself.
 */
const OUTSIDE = new RegExp(
  [
    'DECI' + 'SIONS',
    'MID' + 'TRANS\\.md',
    'CORE' + 'TAX\\.md',
    'STY' + 'LE\\.md',
    'STY' + 'LE habit',
    'STA' + 'CK\\.md',
    '\\.\\./' + 'shared',
    'billing-service-' + 'spec',
  ].join('|'),
);

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SKIPPED_DIRS = new Set(['node_modules', '.git', 'dist', 'coverage', 'data']);

/** The repository's tracked files; without git (an unpacked copy), every file outside build output. */
function projectFiles(): string[] {
  try {
    const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return out.split('\0').filter((f) => f !== '' && !f.split('/').some((part) => SKIPPED_DIRS.has(part)));
  } catch {
    const files: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        if (entry.isDirectory()) {
          if (!SKIPPED_DIRS.has(entry.name)) walk(join(dir, entry.name));
        } else if (entry.isFile()) {
          files.push(relative(ROOT, join(dir, entry.name)).split('\\').join('/'));
        }
      }
    };
    walk(ROOT);
    return files;
  }
}

/** A file's text, or null for a binary file (a NUL byte near the start) or one that is gone. */
function textOf(file: string): string | null {
  const path = join(ROOT, file);
  if (!existsSync(path) || !statSync(path).isFile()) return null;
  const bytes = readFileSync(path);
  if (bytes.subarray(0, 8000).includes(0)) return null;
  return bytes.toString('utf8');
}

function linesMatching(pattern: RegExp): string[] {
  const hits: string[] = [];
  for (const file of projectFiles()) {
    const text = textOf(file);
    if (text === null) continue;
    text.split('\n').forEach((line, i) => {
      if (pattern.test(line)) hits.push(`${file}:${i + 1}: ${line.trim().slice(0, 160)}`);
    });
  }
  return hits;
}

describe('the project stands alone', () => {
  it('no tracked file cites notes kept outside the repository', () => {
    const hits = linesMatching(OUTSIDE);
    expect(hits, `say the rule in place, or point to docs/, instead of:\n${hits.join('\n')}`).toEqual([]);
  });

  it('every pointer to a section of docs/ names a file and a heading that exist', () => {
    // The form is a doc's path, a comma and the heading's first words in single quotes.
    // A pointer may wrap onto the next comment line: `\n * `, `\n // ` or `\n # ` reads as a space.
    const wrap = String.raw`\s*(?:\n\s*(?:\*|\/\/|#)?\s*)?`;
    const pointer = new RegExp(String.raw`(docs\/[\w-]+\.md),` + wrap + String.raw`'([^'\n]+(?:\n[^'\n]*)?)'`, 'g');
    const headings = new Map<string, string[] | null>();
    const headingsOf = (doc: string): string[] | null => {
      if (!headings.has(doc)) {
        const text = textOf(doc);
        headings.set(
          doc,
          text === null
            ? null
            : text
                .split('\n')
                .filter((l) => /^#{1,6} /.test(l))
                .map((l) => l.replace(/^#+ /, '').replace(/`/g, '').trim()),
        );
      }
      return headings.get(doc) ?? null;
    };
    const broken: string[] = [];
    for (const file of projectFiles()) {
      const text = textOf(file);
      if (text === null) continue;
      for (const match of text.matchAll(pointer)) {
        const [, doc, heading] = match;
        const where = `${file}:${text.slice(0, match.index).split('\n').length}`;
        const wanted = heading
          .replace(/\s*\n\s*(?:\*|\/\/|#)?\s*/g, ' ')
          .replace(/`/g, '')
          .trim();
        const found = headingsOf(doc);
        if (found === null) broken.push(`${where}: ${doc} does not exist`);
        else if (!found.some((h) => h.startsWith(wanted))) broken.push(`${where}: ${doc} has no heading '${wanted}'`);
      }
    }
    expect(broken, broken.join('\n')).toEqual([]);
  });
});
