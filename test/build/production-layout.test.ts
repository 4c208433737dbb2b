import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTestDatabase, DATABASES, type TestDatabase } from '../helpers/database.js';
import { composeServices, dockerCmd, interpolate } from './docker-files.js';

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

    it('node dist/cli.js db migrate (then db status exits 0), the Dockerfile\'s CMD (node with start:prod\'s flags, dist/main.js) serves in production mode, SIGTERM stops it (exit 0)', async () => {
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

      const server = spawn(process.execPath, dockerCmd().slice(1), {
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
  /*
   * compose.yaml's database roles, run by hand on the local PostgreSQL: its `app-role` service's
   * psql command and mounted script, its `migrate` service's DATABASE_URL (the owner) and the
   * service's (billing_app), with the local server standing for compose's. The local cluster's
   * superuser stands for compose's `billing` (the postgres image's POSTGRES_USER, a superuser too);
   * the application role gets a name of its own per run, roles being shared by every database.
   */
  describe.skipIf(!process.env.TEST_DATABASE_URL)("compose's database roles, run by hand on PostgreSQL", () => {
    let db: TestDatabase;
    const appRole = `billing_app_${process.pid}_${Date.now().toString(36)}`;
    const admin = () => new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });

    afterAll(async () => {
      if (!db) return;
      const owner = new pg.Client({ connectionString: db.url });
      await owner.connect();
      await owner.query(`drop owned by ${appRole}`).catch(() => undefined);
      await owner.end();
      await db.drop();
      const client = admin();
      await client.connect();
      await client.query(`drop role if exists ${appRole}`);
      await client.end();
    });

    it('the owner migrates; the service and the CLI run as billing_app: a write with its audit event, a read, audit verify; billing_app cannot drop, alter or bypass the audit trail (permission denied)', async () => {
      db = await createTestDatabase('postgresql');
      const local = new URL(db.url);
      const secrets = {
        POSTGRES_PASSWORD: 'owner-password',
        APP_DB_PASSWORD: 'app-password',
        SESSION_SECRET: 'a production secret for this test',
        GATEWAY_SERVER_KEY: 'SB-Mid-server-test',
        PUBLIC_URL: 'https://billing.example.com',
      };
      const services = composeServices();
      const { postgres, migrate, billing } = services;
      const roleService = services['app-role'];
      const owner = postgres.environment!.POSTGRES_USER;

      // What compose hands each container.
      const ownerUrl = new URL(interpolate(migrate.environment!.DATABASE_URL, secrets));
      const appUrl = new URL(interpolate(billing.environment!.DATABASE_URL, secrets));
      expect(ownerUrl.username).toBe(owner);
      expect(ownerUrl.password).toBe(secrets.POSTGRES_PASSWORD);
      expect(appUrl.username).toBe(roleService.environment!.APP_DB_USER);
      expect(appUrl.username).not.toBe(owner);
      expect(appUrl.password).toBe(secrets.APP_DB_PASSWORD);
      for (const url of [ownerUrl, appUrl]) expect([url.host, url.pathname]).toEqual(['postgres:5432', `/${postgres.environment!.POSTGRES_DB}`]);
      expect(interpolate(roleService.environment!.PGUSER, secrets)).toBe(owner);
      expect(interpolate(roleService.environment!.PGPASSWORD, secrets)).toBe(secrets.POSTGRES_PASSWORD);
      expect(billing.environment).toEqual({ ...migrate.environment, DATABASE_URL: billing.environment!.DATABASE_URL });

      // The same URLs, pointed at the local server, its superuser and this test's database.
      const here = (url: URL, user: string) => {
        const out = new URL(url);
        out.host = local.host;
        out.pathname = local.pathname;
        out.username = user;
        return out.toString();
      };
      const env = (url: string) => ({ ...secrets, NODE_ENV: 'production', GATEWAY_BASE_URL: 'http://127.0.0.1:9/gateway', DATABASE_URL: url });
      const asOwner = env(here(ownerUrl, local.username));
      const asApp = env(here(appUrl, appRole));

      // The app-role service: its command, with the file its volume mounts, in its environment.
      const mount = roleService.volumes!.map((v) => v.split(':')).find(([, inContainer]) => roleService.command!.includes(inContainer!))!;
      const psqlArgs = roleService.command!.slice(1).map((a) => (a === mount[1] ? join(root, mount[0]!) : a));
      const psqlEnv = {
        ...Object.fromEntries(Object.entries(roleService.environment!).map(([k, v]) => [k, interpolate(v, secrets)])),
        PGHOST: local.hostname,
        PGPORT: local.port || '5432',
        PGUSER: local.username,
        PGDATABASE: local.pathname.slice(1),
        APP_DB_USER: appRole,
      };
      expect(roleService.command![0]).toBe('psql');
      expect(roleService.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });

      const migrated = run(process.execPath, ['dist/cli.js', 'db', 'migrate', '--json'], asOwner);
      expect(migrated.code, migrated.stderr).toBe(0);
      const granted = run('psql', psqlArgs, psqlEnv);
      expect(granted.code, granted.stderr).toBe(0);
      // Run again (every `up` does): the role is kept, its grants made again.
      expect(run('psql', psqlArgs, psqlEnv).code).toBe(0);

      // The CLI as billing_app: a write that appends to the audit trail, then the chain verified.
      expect(run(process.execPath, ['dist/cli.js', 'db', 'status'], asApp).code).toBe(0);
      const made = run(process.execPath, ['dist/cli.js', 'users', 'create', '--username', 'carol', '--password', 'carol-password-1', '--reason', 'test: compose roles', '--json'], asApp);
      expect(made.code, made.stderr).toBe(0);
      const verified = run(process.execPath, ['dist/cli.js', 'audit', 'verify', '--json'], asApp);
      expect(verified.code, verified.stdout + verified.stderr).toBe(0);
      expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, events_checked: expect.any(Number) });
      expect(JSON.parse(verified.stdout).events_checked).toBeGreaterThan(0);

      // A month later, the coming month's usage partition is missing (taken away here by the
      // owner): the service, though it owns nothing, makes it at start-up.
      const newest = await (async () => {
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        try {
          const names = (await client.query("select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'usage_events'::regclass and c.relname <> 'usage_events_default' order by 1")).rows.map((r) => r.name as string);
          const last = names.at(-1)!;
          await client.query(`alter table usage_events detach partition ${last}`);
          await client.query(`drop table ${last}`);
          return last;
        } finally {
          await client.end();
        }
      })();

      // The service as billing_app, started as the image starts it: a read of carol's wallet.
      const server = spawn(process.execPath, dockerCmd().slice(1), {
        cwd: app,
        env: { PATH: process.env.PATH ?? '', ...asApp, PORT: '0', BILLING_SCHEDULER_INTERVAL: '0', LOG_REQUESTS: 'false' },
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
        expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
        const wallet = await fetch(`http://127.0.0.1:${port}/api/subscriptions/wallet/me/`, { headers: { authorization: `Basic ${Buffer.from('carol:carol-password-1').toString('base64')}` } });
        expect(wallet.status).toBe(200);
        expect(await wallet.json()).toMatchObject({ balance: '0.00', is_active: true });
      } finally {
        server.kill('SIGTERM');
      }
      expect(await exited, out).toBe(0);

      // billing_app cannot lift or get round the audit trail's protection.
      const appClient = new pg.Client({ connectionString: asApp.DATABASE_URL.replace(/\?.*$/, '') });
      const ownerClient = new pg.Client({ connectionString: db.url });
      await appClient.connect();
      await ownerClient.connect();
      try {
        const events = Number((await ownerClient.query('select count(*) as n from audit_events')).rows[0].n);
        expect(events).toBeGreaterThan(0);
        const triggers = (await ownerClient.query("select tgname from pg_trigger where tgrelid = 'audit_events'::regclass and not tgisinternal")).rows.map((r) => r.tgname as string);
        expect(triggers.length).toBeGreaterThan(0);
        const refusal = async (sql: string) => appClient.query(sql).then(() => 'allowed', (err: { code?: string; message: string }) => `${err.code}: ${err.message}`);
        for (const sql of [
          'alter table audit_events disable trigger all',
          `drop trigger ${triggers[0]} on audit_events`,
          'drop table audit_events',
          'alter table audit_events drop column reason',
          "update audit_events set reason = 'rewritten'",
          'delete from audit_events',
          'truncate audit_events',
          'set session_replication_role = replica',
          'create table smuggled (id int)',
        ]) {
          expect(await refusal(sql), sql).toMatch(/^42501: (permission denied|must be owner)/);
        }
        expect(Number((await ownerClient.query('select count(*) as n from audit_events')).rows[0].n)).toBe(events);
        // The partition the service made at start-up is attached, and the owner's.
        const partition = await ownerClient.query("select r.rolname as owner from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_roles r on r.oid = c.relowner where i.inhparent = 'usage_events'::regclass and c.relname = $1", [newest]);
        expect(partition.rows).toEqual([{ owner: local.username }]);
        // billing_app owns nothing in the database.
        expect((await ownerClient.query('select count(*)::int as n from pg_class c join pg_roles r on r.oid = c.relowner where r.rolname = $1', [appRole])).rows[0].n).toBe(0);

        // A table and a sequence a later migration makes (as the owner) are billing_app's to use
        // before the script runs again: the default privileges.
        await ownerClient.query('create table later_table (id int primary key); create sequence later_sequence');
        await appClient.query('insert into later_table values (1)');
        expect((await appClient.query('select count(*)::int as n from later_table')).rows[0].n).toBe(1);
        expect(Number((await appClient.query("select nextval('later_sequence') as n")).rows[0].n)).toBe(1);
      } finally {
        await appClient.end();
        await ownerClient.end();
      }
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
    expect(dockerCmd().at(-1)).toBe('dist/main.js');
    expect(runtime).toContain('ENV NODE_ENV=production');
  });

  it("the image starts node as start:prod does (the same heap flags), and so does the documented systemd unit", () => {
    const startProd = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start:prod']!.split(/\s+/);
    expect(startProd).toEqual(expect.arrayContaining([expect.stringMatching(/^--max-old-space-size=\d+$/), expect.stringMatching(/^--max-semi-space-size=\d+$/)]));
    expect(dockerCmd()).toEqual(startProd);
    const unit = /^ExecStart=\/usr\/bin\/(node .*dist\/main\.js)$/m.exec(readFileSync(join(root, 'docs/operations.md'), 'utf8'));
    expect(unit?.[1].split(/\s+/)).toEqual(startProd);
  });

  it('compose: PostgreSQL 16, a one-shot migrate service as the owner, a one-shot app-role service, the service as billing_app once both have completed, secrets from the environment', () => {
    const services = composeServices();
    const { postgres, migrate, billing } = services;
    const role = services['app-role'];
    expect(postgres.image).toBe('postgres:16');
    expect(migrate.command).toEqual(['node', 'dist/cli.js', 'db', 'migrate']);
    expect(migrate.restart).toBe('no');
    expect(migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(role.image).toBe('postgres:16');
    expect(role.restart).toBe('no');
    expect(role.depends_on).toEqual({ migrate: { condition: 'service_completed_successfully' } });
    expect(role.volumes).toEqual(['./docker/app-role.sql:/app-role.sql:ro']);
    expect(existsSync(join(root, 'docker/app-role.sql'))).toBe(true);
    expect(billing.depends_on).toEqual({ 'app-role': { condition: 'service_completed_successfully' } });
    expect(billing.image).toBe(migrate.image);
    for (const name of ['SESSION_SECRET', 'GATEWAY_SERVER_KEY', 'PUBLIC_URL', 'DATABASE_URL']) {
      expect(billing.environment?.[name], name).toMatch(/\$\{/);
    }
    expect(billing.environment?.DATABASE_URL).toMatch(/^postgres:\/\/billing_app:\$\{APP_DB_PASSWORD:\?/);
    expect(migrate.environment?.DATABASE_URL).toMatch(/^postgres:\/\/billing:\$\{POSTGRES_PASSWORD:\?/);
    expect(billing.environment?.NODE_ENV).toBe('production');
  });
  it("every documented docker run keeps the data volume, puts its options before the image, and the env file it reads has what production requires", () => {
    const docs = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
    const runs = docs.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .filter((line) => /^docker run /.test(line))
        .map((line) => ({ file, line })),
    );
    expect(runs.length).toBeGreaterThan(0);
    for (const { file, line } of runs) {
      const words = line.replace(/\s+#.*$/, '').split(/\s+/);
      const image = words.indexOf('billing-service');
      expect(image, `${file}: ${line}`).toBeGreaterThan(1);
      const options = words.slice(2, image).join(' ');
      expect(options, `${file}: ${line}`).toContain('-v billing-data:/app/data');
      expect(options, `${file}: ${line}`).toContain('--env-file billing.env');
      // After the image, only a command: node and its arguments.
      const command = words.slice(image + 1);
      if (command.length > 0) expect(command[0], `${file}: ${line}`).toBe('node');
      expect(command.filter((w) => w.startsWith('-') && !['--json'].includes(w)), `${file}: ${line}`).toEqual([]);
    }
    const operations = readFileSync(join(root, 'docs/operations.md'), 'utf8');
    const envFile = /```sh\n# billing\.env\n([\s\S]*?)```/.exec(operations)![1]!;
    const names = envFile.split('\n').filter(Boolean).map((l) => l.split('=')[0]);
    const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
    for (const name of ['GATEWAY_BASE_URL', 'GATEWAY_SERVER_KEY', 'SESSION_SECRET', 'PUBLIC_URL']) expect(names, name).toContain(name);
    for (const name of ['NODE_ENV=production', 'DATABASE_URL=sqlite:/app/data/billing.sqlite']) expect(dockerfile, name).toContain(name);
  });
});
