import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The text of a PDF as poppler's pdftotext reads it (layout kept, so a row stays on one line). */
export async function pdfText(pdf: Buffer): Promise<string> {
  return withFile(pdf, async (file) => (await run('pdftotext', ['-layout', '-enc', 'UTF-8', file, '-'], { encoding: 'utf8' })).stdout);
}

/** Renders page 1 with pdftoppm and returns the PNG (pdftoppm exits non-zero on a broken PDF). */
export async function renderFirstPage(pdf: Buffer): Promise<Buffer> {
  return withFile(pdf, async (file, dir) => {
    await run('pdftoppm', ['-png', '-r', '50', '-f', '1', '-l', '1', '-singlefile', file, join(dir, 'page')]);
    return readFile(join(dir, 'page.png'));
  });
}

async function withFile<T>(pdf: Buffer, use: (file: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'billing-pdf-'));
  try {
    const file = join(dir, 'document.pdf');
    await writeFile(file, pdf);
    return await use(file, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
