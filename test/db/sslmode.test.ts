import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { connectionSecurity, openOrm } from '../../src/db/orm.js';
import { runCli } from '../helpers/cli.js';

/*
 * DATABASE_URL's sslmode (else PGSSLMODE) as libpq reads it. The PostgreSQL these tests use
 * (127.0.0.1:5432) offers no TLS, which is what `require` must refuse; a small TLS front (a
 * self-signed CA and a certificate for "localhost", passing the decrypted stream to that
 * PostgreSQL) stands for a server that offers it, for the modes that verify a certificate.
 */

const PG = process.env.TEST_DATABASE_URL;
const withQuery = (url: string, query: string) => `${url}${url.includes('?') ? '&' : '?'}${query}`;

describe('sslmode is checked before anything connects', () => {
  it('an unknown sslmode in DATABASE_URL, or in PGSSLMODE, is a configuration error naming it', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=required' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=required' })).toThrow(/DATABASE_URL's sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full.*"required"/);
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing', PGSSLMODE: 'on' })).toThrow(/PGSSLMODE must be one of .*"on"/);
    // pg's own `no-verify` is not libpq's: refused as unknown too.
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=no-verify' })).toThrow(/"no-verify"/);
    // The URL's own sslmode wins over PGSSLMODE, as in libpq.
    expect(loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=disable', PGSSLMODE: 'bogus' }).databaseUrl).toContain('sslmode=disable');
    // SQLite has no sslmode to read.
    expect(() => loadConfig({ DATABASE_URL: 'sqlite::memory:', PGSSLMODE: 'require' })).not.toThrow();
  });

  it('a verifying mode without a root certificate, or a certificate file that does not exist, is refused with the fix', () => {
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=verify-full', HOME: '/nonexistent' })).toThrow(
      /sslmode=verify-full .*no root certificate.*sslrootcert=system.*sslmode=require/,
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=verify-ca&sslrootcert=/no/such/ca.pem' })).toThrow(
      /sslrootcert names no file: \/no\/such\/ca.pem/,
    );
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@db.example/billing?sslmode=require&sslrootcert=system' })).toThrow(/sslrootcert=system needs sslmode=verify-full/);
  });

  it('the CLI exits 2 on an unknown sslmode, naming it, before connecting', async () => {
    const res = await runCli(['db', 'status'], { DATABASE_URL: 'postgres://u@127.0.0.1:1/billing?sslmode=sometimes' });
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/configuration: DATABASE_URL's sslmode must be one of .*"sometimes"/);
    const env = await runCli(['db', 'status'], { DATABASE_URL: 'postgres://u@127.0.0.1:1/billing', PGSSLMODE: 'yes' });
    expect(env.code).toBe(2);
    expect(env.stderr).toMatch(/PGSSLMODE must be one of .*"yes"/);
  });
});

describe.skipIf(!PG)('sslmode against PostgreSQL', { timeout: 60_000 }, () => {
  let dir: string;
  let front: Server;
  let frontPort: number;
  const caFile = () => join(dir, 'ca.pem');
  const otherCaFile = () => join(dir, 'other-ca.pem');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'billing-tls-'));
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    for (const ca of ['ca', 'other-ca']) {
      openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.pem`, '-days', '2', '-subj', `/CN=Test ${ca}`);
    }
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
    writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost\n');
    openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'san.ext');
    const { readFileSync } = await import('node:fs');
    const key = readFileSync(join(dir, 'server.key'));
    const cert = readFileSync(join(dir, 'server.pem'));
    const target = new URL(PG!);
    // A PostgreSQL that offers TLS: answers the client's SSLRequest with 'S', ends TLS, and passes
    // the rest to the real server in the clear.
    front = createServer((client: Socket) => {
      client.once('data', (first) => {
        const sslRequest = first.length === 8 && first.readInt32BE(4) === 80877103;
        // A connection without TLS is refused as PostgreSQL refuses it where pg_hba.conf has
        // only `hostssl` lines: a FATAL error response, then the connection closes.
        if (!sslRequest) return client.end(noEncryptionRefusal());
        client.write('S');
        const secure = new TLSSocket(client, { isServer: true, key, cert });
        const upstream = connect(Number(target.port || 5432), target.hostname);
        secure.pipe(upstream).pipe(secure);
        for (const s of [secure, upstream, client]) s.on('error', () => (secure.destroy(), upstream.destroy()));
        secure.on('close', () => upstream.destroy());
        upstream.on('close', () => secure.destroy());
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', () => resolve()));
    frontPort = (front.address() as { port: number }).port;
  });

  /** PostgreSQL 14+'s ErrorResponse to an unencrypted start-up that only `hostssl` lines would accept. */
  function noEncryptionRefusal(): Buffer {
    const fields = ['SFATAL', 'VFATAL', 'C28000', 'Mno pg_hba.conf entry for host "127.0.0.1", user "postgres", database "billing", no encryption'];
    const body = Buffer.concat([...fields.map((f) => Buffer.from(`${f}\0`)), Buffer.from([0])]);
    const header = Buffer.alloc(5);
    header.write('E', 0);
    header.writeInt32BE(body.length + 4, 1);
    return Buffer.concat([header, body]);
  }

  afterAll(async () => {
    await new Promise((resolve) => front?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  /** TEST_DATABASE_URL through the TLS front, at `host` (localhost matches the certificate, 127.0.0.1 does not). */
  const viaFront = (host: string, query: string) => {
    const url = new URL(PG!);
    url.hostname = host;
    url.port = String(frontPort);
    return withQuery(url.toString(), query);
  };

  async function connects(url: string): Promise<true | string> {
    try {
      const orm = await openOrm(url);
      await orm.em.getConnection().execute('select 1');
      await orm.close(true);
      return true;
    } catch (err) {
      return String((err as Error).message);
    }
  }

  it('require against a server without TLS does not connect (it used to connect unencrypted, silently), and says which setting asked for TLS', async () => {
    const failure = await connects(withQuery(PG!, 'sslmode=require'));
    expect(failure).toMatch(/does not support SSL/);
    const res = await runCli(['db', 'status'], { DATABASE_URL: withQuery(PG!, 'sslmode=require') });
    expect(res.code, res.stderr).toBe(5);
    expect(res.stderr).toMatch(/The server does not support SSL connections.*DATABASE_URL's sslmode=require asks for TLS/);
    // PGSSLMODE when the URL has none; the URL's own sslmode over it.
    const fromEnv = await runCli(['db', 'status'], { DATABASE_URL: PG!, PGSSLMODE: 'require' });
    expect(fromEnv.code).toBe(5);
    expect(fromEnv.stderr).toMatch(/PGSSLMODE=require asks for TLS/);
    const urlWins = await runCli(['db', 'status', '--json'], { DATABASE_URL: withQuery(PG!, 'sslmode=disable'), PGSSLMODE: 'require' });
    expect([0, 3]).toContain(urlWins.code);
    for (const mode of ['verify-ca', 'verify-full']) {
      expect(await connects(withQuery(PG!, `sslmode=${mode}&sslrootcert=${caFile()}`))).toMatch(/does not support SSL/);
    }
  });

  it('disable, allow, prefer (the default) connect to it unencrypted, and say so', async () => {
    for (const query of ['sslmode=disable', 'sslmode=allow', 'sslmode=prefer', '']) {
      const orm = await openOrm(query ? withQuery(PG!, query) : PG!);
      try {
        expect(await connectionSecurity(orm)).toBe(`NOT encrypted (sslmode=${query ? query.slice('sslmode='.length) : 'prefer, the default'})`);
      } finally {
        await orm.close(true);
      }
    }
  });

  it('the server start-up line says the connection is not encrypted', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: { ...process.env, NODE_ENV: 'test', PORT: '0', DATABASE_URL: withQuery(PG!, 'sslmode=prefer'), MIGRATE_ON_START: 'true', LOG_REQUESTS: 'false', BILLING_SCHEDULER_INTERVAL: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => /database: .*\n/.test(out) && resolve());
        child.on('exit', () => reject(new Error(out)));
      });
      expect(out).toMatch(/database: postgres.*\(postgresql, NOT encrypted \(sslmode=prefer\)\)/);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });

  it('with a server that offers TLS: require and prefer encrypt; verify-ca checks the chain; verify-full the chain and the host name', async () => {
    // require: any certificate (self-signed here); prefer takes TLS when offered.
    expect(await connects(viaFront('127.0.0.1', 'sslmode=require'))).toBe(true);
    expect(await connects(viaFront('127.0.0.1', 'sslmode=prefer'))).toBe(true);
    // verify-ca: the right CA passes whatever the host name; another CA fails.
    expect(await connects(viaFront('127.0.0.1', `sslmode=verify-ca&sslrootcert=${caFile()}`))).toBe(true);
    expect(await connects(viaFront('127.0.0.1', `sslmode=verify-ca&sslrootcert=${otherCaFile()}`))).toMatch(/certificate/i);
    // verify-full: the right CA and the name on the certificate (localhost), not 127.0.0.1.
    expect(await connects(viaFront('localhost', `sslmode=verify-full&sslrootcert=${caFile()}`))).toBe(true);
    expect(await connects(viaFront('127.0.0.1', `sslmode=verify-full&sslrootcert=${caFile()}`))).toMatch(/IP: 127.0.0.1 is not in the cert's list|altnames/i);
    // require with a root certificate verifies the chain, as libpq does (verify-ca).
    expect(await connects(viaFront('127.0.0.1', `sslmode=require&sslrootcert=${otherCaFile()}`))).toMatch(/certificate/i);
    // disable never sends the SSLRequest: the front (TLS only) refuses the connection.
    expect(await connects(viaFront('127.0.0.1', 'sslmode=disable'))).not.toBe(true);
  });

  it('disable against a server that requires TLS: exit 5, saying the server requires TLS and sslmode=disable refuses it, with the modes to use instead', async () => {
    const res = await runCli(['db', 'status'], { DATABASE_URL: viaFront('127.0.0.1', 'sslmode=disable') });
    expect(res.code, res.stderr).toBe(5);
    expect(res.stderr).toMatch(/no encryption/);
    expect(res.stderr).toMatch(/the server requires TLS and DATABASE_URL's sslmode=disable refuses it: use sslmode=verify-full .*or sslmode=require/);
    expect(res.stderr).not.toMatch(/asks for TLS/);
    const fromEnv = await runCli(['db', 'status'], { DATABASE_URL: viaFront('127.0.0.1', ''), PGSSLMODE: 'disable' });
    expect(fromEnv.code).toBe(5);
    expect(fromEnv.stderr).toMatch(/the server requires TLS and PGSSLMODE=disable refuses it/);
  });
});
