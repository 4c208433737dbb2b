import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';

/*
 * The production layout, as the Dockerfile's runtime stage has it, without Docker: the project
 * copied outside the checkout, `npm run build`, `npm prune --omit=dev`, the sources removed;
 * then `node dist/cli.js` migrates and `node dist/main.js` serves, with no TypeScript tooling.
 * node_modules is copied as hard links (nothing is downloaded or compiled; better-sqlite3's
 * native module is the one already built) and pruned by npm itself.
 */

const root = resolve(import.meta.dirname, '../..');
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

let app: string;

function run(command: string, args: string[], env: Record<string, string> = {}): { code: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync(command, args, { cwd: app, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }, stdio: 'pipe', encoding: 'utf8' });
    return { code: 0, stdout, stderr: '' };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the production layout: dist/ and production dependencies only', { timeout: 180_000 }, () => {
  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), 'billing-production-'));
    for (const entry of ['package.json', 'package-lock.json', 'openapi.yaml', 'tsconfig.json', 'hosted', 'src', 'cli', 'migrations', 'scripts']) {
      cpSync(join(root, entry), join(app, entry), { recursive: true });
    }
    // Hard links: fast, and npm prune only removes files. Its own record (.package-lock.json),
    // which npm rewrites in place, is a real copy so the checkout's is never touched.
    execFileSync('cp', ['-al', join(root, 'node_modules'), join(app, 'node_modules')]);
    rmSync(join(app, 'node_modules/.package-lock.json'), { force: true });
    rmSync(join(app, 'node_modules/.cache'), { recursive: true, force: true });
    cpSync(join(root, 'node_modules/.package-lock.json'), join(app, 'node_modules/.package-lock.json'));

    // (No `-- --log-level=…`: npm would hand it to the build's last command, which writes the parsed contract.)
    const built = run('npm', ['run', '-s', 'build']);
    expect(built.code, built.stderr).toBe(0);
    const pruned = run('npm', ['prune', '--omit=dev', '--offline', '--ignore-scripts', '--no-audit', '--no-fund']);
    expect(pruned.code, pruned.stderr).toBe(0);
    // What the runtime image keeps: dist/, the contract, the hosted pages' files, the bin.
    for (const entry of ['src', 'migrations', 'scripts', 'tsconfig.json']) rmSync(join(app, entry), { recursive: true, force: true });
    for (const file of ['main.ts', 'runtime.ts', 'commands']) rmSync(join(app, 'cli', file), { recursive: true, force: true });
  }, 180_000);

  afterAll(() => {
    if (app) rmSync(app, { recursive: true, force: true });
  });

  it('has the bundles and no development tooling: no tsx, esbuild, typescript or vitest', () => {
    for (const file of ['dist/main.js', 'dist/cli.js', 'dist/render-worker.js', 'dist/openapi.json']) expect(existsSync(join(app, file)), file).toBe(true);
    for (const pkg of ['tsx', 'esbuild', 'typescript', 'vitest', '@redocly/cli']) expect(existsSync(join(app, 'node_modules', pkg)), pkg).toBe(false);
    for (const pkg of ['better-sqlite3', 'pg', '@mikro-orm/core', 'koa']) expect(existsSync(join(app, 'node_modules', pkg)), pkg).toBe(true);
  });

  it('node dist/cli.js --version, and the package bin without tsx or sources', () => {
    expect(run(process.execPath, ['dist/cli.js', '--version']).stdout.trim()).toBe(VERSION);
    expect(run(process.execPath, ['cli/billing-admin.js', '--version']).stdout.trim()).toBe(VERSION);
  });

  describe.each(DATABASES)('on %s', (kind) => {
    let db: TestDatabase;
    afterAll(async () => {
      await db?.drop();
    });

    it('node dist/cli.js db migrate (then db status exits 0), node dist/main.js serves in production mode, SIGTERM stops it (exit 0)', async () => {
      db = await createTestDatabase(kind);
      // The settings production requires, for the CLI as for the server (one configuration).
      const env = {
        DATABASE_URL: db.url,
        NODE_ENV: 'production',
        SESSION_SECRET: 'a production secret for this test',
        GATEWAY_BASE_URL: 'http://127.0.0.1:9/gateway',
        GATEWAY_SERVER_KEY: 'SB-Mid-server-test',
        PUBLIC_URL: 'https://billing.example.com',
      };
      const before = run(process.execPath, ['dist/cli.js', 'db', 'status'], env);
      if (kind === 'postgresql') expect(before.code, before.stderr).toBe(3);
      const migrated = run(process.execPath, ['dist/cli.js', 'db', 'migrate', '--json'], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(JSON.parse(migrated.stdout).applied.length).toBeGreaterThan(0);
      expect(run(process.execPath, ['dist/cli.js', 'db', 'status'], env).code).toBe(0);

      const server = spawn(process.execPath, ['dist/main.js'], {
        cwd: app,
        env: {
          PATH: process.env.PATH ?? '',
          ...env,
          PORT: '0',
          BILLING_SCHEDULER_INTERVAL: '0',
          LOG_REQUESTS: 'false',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      server.stdout.on('data', (d) => (out += d));
      server.stderr.on('data', (d) => (out += d));
      const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
      try {
        await new Promise<void>((resolve, reject) => {
          server.stdout.on('data', () => /process: +pid/.test(out) && resolve());
          server.on('exit', () => reject(new Error(out)));
        });
        const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)![1]);
        const health = await fetch(`http://127.0.0.1:${port}/healthz`);
        expect(health.status).toBe(200);
        expect(await health.json()).toMatchObject({ version: VERSION });
        const plans = await fetch(`http://127.0.0.1:${port}/api/subscriptions/plans/`);
        expect(plans.status).toBe(200);
        // The start-up line says how the database is reached.
        expect(out).toMatch(kind === 'sqlite' ? /\(sqlite, local file\)/ : /\(postgresql, NOT encrypted/);
      } finally {
        server.kill('SIGTERM');
      }
      expect(await exited, out).toBe(0);
      expect(out).toContain('stopped: every request answered; database closed');
    });
  });
});

/*
 * Docker is not on the test machines: the image is proved by the layout above, and these checks
 * hold the Dockerfile and compose.yaml to it.
 */
describe('the Dockerfile and compose.yaml describe that layout', () => {
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));

  it('multi-stage: the build stage has the C++ toolchain and builds and prunes; the runtime stage copies what the layout test keeps, as a non-root user, with a health check', () => {
    expect(dockerfile).toMatch(/FROM node:20[^\n]* AS build/);
    expect(dockerfile).toMatch(/apt-get install[^\n]*python3 make g\+\+/);
    expect(dockerfile).toContain('RUN npm run build && npm prune --omit=dev');
    expect(runtime).toMatch(/^AS runtime/);
    const copied = [...runtime.matchAll(/^COPY --from=build (.+) (\S+)$/gm)].flatMap((m) => m[1].split(' ')).map((f) => f.replace(/^\/app\//, ''));
    expect(copied.sort()).toEqual(['cli/billing-admin.js', 'dist', 'hosted', 'node_modules', 'openapi.yaml', 'package-lock.json', 'package.json']);
    expect(runtime).toMatch(/^USER node$/m);
    expect(runtime).toMatch(/HEALTHCHECK[\s\S]*\/healthz/);
    expect(runtime).toMatch(/^CMD \["node", "--enable-source-maps", "dist\/main.js"\]$/m);
    expect(runtime).toContain('ENV NODE_ENV=production');
  });

  it('compose: PostgreSQL 16, a one-shot migrate service, the service starting once it has completed, secrets from the environment', () => {
    const compose = parse(readFileSync(join(root, 'compose.yaml'), 'utf8')) as {
      services: Record<string, { image?: string; command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; restart?: string }>;
    };
    const { postgres, migrate, billing } = compose.services;
    expect(postgres.image).toBe('postgres:16');
    expect(migrate.command).toEqual(['node', 'dist/cli.js', 'db', 'migrate']);
    expect(migrate.restart).toBe('no');
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(billing.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    expect(billing.image).toBe(migrate.image);
    for (const name of ['SESSION_SECRET', 'GATEWAY_SERVER_KEY', 'PUBLIC_URL', 'DATABASE_URL']) {
      expect(billing.environment?.[name], name).toMatch(/\$\{/);
    }
    expect(billing.environment?.NODE_ENV).toBe('production');
  });
});
