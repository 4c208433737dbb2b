import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { PROJECT_ROOT, startServerProcess, type ServerProcess } from '../helpers/reliability/server-process.js';

/*
 * The README's quick start and its "Integrating from a backend" commands, run as written in bash
 * against a server started as `npm start` starts it, on a fresh SQLite database. Only the
 * server's address (the test's port, not 3000) and where the PDF is written (a temporary folder,
 * not the checkout) are changed.
 */
const README = readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8');

/** The shell blocks of the README section that starts with `## heading`. */
function shellBlocks(heading: string): string[] {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README has no section '${heading}'`);
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]);
}

function bash(script: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', `set -euo pipefail\n${script}`], { cwd: PROJECT_ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the README's quick start, as written", { timeout: 180_000 }, () => {
  let db: TestDatabase;
  let server: ServerProcess;
  let scratch: string;
  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'quick-start-'));
    db = await createTestDatabase('sqlite');
    // As `npm start`: the built-in simulator, the scheduler as by default; /app/ protected, as the
    // README's access check says it assumes.
    server = await startServerProcess({ databaseUrl: db.url, env: { BILLING_SCHEDULER_INTERVAL: '60', SUBSCRIPTION_PROTECTED_PATHS: '/app/' } });
  });
  afterAll(async () => {
    await server?.stop();
    await db?.drop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('ends in a paid subscription and its invoice PDF; the backend commands make a customer, a checkout link and ask the access check', async () => {
    const [start, quickStart] = shellBlocks('Quick start');
    expect(start.trim()).toBe('npm ci && npm start');
    const [integrating] = shellBlocks('Integrating from a backend');
    const pdf = join(scratch, 'invoice.pdf');
    const marker = (name: string) => `\necho '== ${name}'\n`;
    const script = (marker('quick start') + quickStart + marker('integrating') + integrating)
      .replaceAll('http://127.0.0.1:3000', server.url)
      .replace('-o invoice.pdf', `-o '${pdf}'`);
    expect(script).toContain(`-o '${pdf}'`);

    const run = await bash(script, { DATABASE_URL: db.url, BILLING_URL: server.url, NODE_ENV: 'test' });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    const [quick, backend] = run.stdout.split('== integrating');

    expect(quick).toContain('"slug":"starter-monthly"');
    expect(quick).toMatch(/"status":"active"/);
    const bytes = readFileSync(pdf);
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');

    expect(backend).toContain('"external_id":"u_81723"');
    expect(backend).toMatch(new RegExp(`"url":"${server.url}/pay/[^"]+/"`));
    expect(backend).toContain('"allowed":false');
    expect(backend).toContain('"reason":"subscription_required"');
  });
});
