import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';

/*
 * TLS to PostgreSQL, read from DATABASE_URL's `sslmode` (else PGSSLMODE) the way libpq reads it.
 * NOTE: MikroORM takes only the host, port, user, password and database out of a postgres://
 * URL, so before this an `sslmode=require` was dropped and the connection made unencrypted,
 * silently. The pg driver is now always given `ssl` explicitly (it would otherwise read
 * PGSSLMODE on its own, with its own meaning of `require`).
 */

export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;
export type SslMode = (typeof SSL_MODES)[number];

export interface SslSettings {
  mode: SslMode;
  /** Where the mode came from, for messages: `sslmode` in DATABASE_URL, PGSSLMODE, or libpq's default. */
  source: 'DATABASE_URL' | 'PGSSLMODE' | 'default';
  /** A CA file (sslrootcert, PGSSLROOTCERT, ~/.postgresql/root.crt), 'system' for the system's roots, or null. */
  rootCert: string | null;
  clientCert: string | null;
  clientKey: string | null;
  /** The host name verify-full checks the certificate against: the URL's, as written. */
  host: string;
}

type Env = Record<string, string | undefined>;

/**
 * The TLS settings of a postgres:// URL, or the reason they are refused (an unknown sslmode, a
 * certificate file that does not exist, a verifying mode with no root certificate): the
 * configuration turns the reason into a ConfigError, so the process does not start.
 */
export function sslSettingsOf(url: string, env: Env = process.env): SslSettings | { problem: string } {
  const params = new URL(url).searchParams;
  const fromUrl = params.get('sslmode');
  const raw = fromUrl ?? (env.PGSSLMODE || null);
  const source = fromUrl !== null ? 'DATABASE_URL' : raw !== null ? 'PGSSLMODE' : 'default';
  const named = source === 'DATABASE_URL' ? "DATABASE_URL's sslmode" : 'PGSSLMODE';
  if (raw !== null && !(SSL_MODES as readonly string[]).includes(raw)) {
    return { problem: `${named} must be one of ${SSL_MODES.join(', ')} (as libpq reads it), got "${raw}"` };
  }
  // libpq's default is prefer: TLS when the server offers it, else unencrypted.
  const mode = (raw ?? 'prefer') as SslMode;
  const file = (name: string, envName: string): string | null => params.get(name) ?? (env[envName] || null);
  let rootCert = file('sslrootcert', 'PGSSLROOTCERT');
  const clientCert = file('sslcert', 'PGSSLCERT');
  const clientKey = file('sslkey', 'PGSSLKEY');
  for (const [name, path] of [['sslrootcert', rootCert], ['sslcert', clientCert], ['sslkey', clientKey]] as const) {
    if (path && path !== 'system' && !existsSync(path)) return { problem: `DATABASE_URL's ${name} names no file: ${path}` };
  }
  if (rootCert === null) {
    const libpqDefault = join(homedir(), '.postgresql', 'root.crt');
    if (existsSync(libpqDefault)) rootCert = libpqDefault;
  }
  if ((mode === 'verify-ca' || mode === 'verify-full') && rootCert === null) {
    return {
      problem: `sslmode=${mode} (${named}) verifies the server's certificate and no root certificate is given: set sslrootcert=/path/to/ca.pem in DATABASE_URL (or PGSSLROOTCERT), sslrootcert=system for the system's trusted roots, or use sslmode=require, which encrypts without verifying`,
    };
  }
  if (rootCert === 'system' && mode !== 'verify-full') {
    // libpq 16: sslrootcert=system implies verify-full, and refuses a weaker mode beside it.
    return { problem: `sslrootcert=system needs sslmode=verify-full, got sslmode=${mode}` };
  }
  return { mode, source, rootCert, clientCert, clientKey, host: new URL(url).hostname.replace(/^\[(.*)\]$/, '$1') };
}

/**
 * The `ssl` option of the pg driver for one attempt: false (no TLS) or TLS options. `require`
 * with a root certificate verifies the chain, as libpq does (it then behaves as verify-ca).
 */
export function pgSslOption(settings: SslSettings, tls: boolean): false | ConnectionOptions {
  if (!tls) return false;
  const options: ConnectionOptions = {};
  if (settings.clientCert) options.cert = readFileSync(settings.clientCert, 'utf8');
  if (settings.clientKey) options.key = readFileSync(settings.clientKey, 'utf8');
  const verify = settings.mode === 'verify-full' || settings.mode === 'verify-ca' || (settings.mode === 'require' && settings.rootCert !== null);
  if (!verify) return { ...options, rejectUnauthorized: false };
  if (settings.rootCert && settings.rootCert !== 'system') options.ca = readFileSync(settings.rootCert, 'utf8');
  options.rejectUnauthorized = true;
  // verify-ca: the chain, not the host name. verify-full: the URL's host, named explicitly: pg
  // hands Node no host for an IP address, and Node then checks the certificate against "localhost".
  options.checkServerIdentity = settings.mode === 'verify-full' ? (_servername, cert) => checkServerIdentity(settings.host, cert) : () => undefined;
  return options;
}

/**
 * The attempts libpq makes, in order: TLS only (require, verify-*), none (disable), TLS then
 * none (prefer: when the server offers no TLS), none then TLS (allow: when the server insists).
 */
export function sslAttempts(mode: SslMode): boolean[] {
  if (mode === 'disable') return [false];
  if (mode === 'allow') return [false, true];
  if (mode === 'prefer') return [true, false];
  return [true];
}

/** The URL without its libpq TLS parameters: pg.Client reads `sslmode` from a connection string itself, over its `ssl` option. */
export function withoutSslParams(url: string): string {
  const parsed = new URL(url);
  for (const name of ['sslmode', 'sslrootcert', 'sslcert', 'sslkey']) parsed.searchParams.delete(name);
  return parsed.toString();
}

/** A server's refusal of a connection without TLS: PostgreSQL 14+ ("no encryption"), older ones ("SSL off"), managed services. */
const TLS_REQUIRED = /no encryption|SSL off|SSL (connection )?is required|requires? (an )?(SSL|TLS|encrypt)|hostssl/i;

/**
 * What to change when a connection failed over TLS, or because it was made without TLS to a
 * server that requires it; null when the failure has nothing to do with TLS. It names where the
 * mode came from (DATABASE_URL or PGSSLMODE), since that is what the operator edits.
 */
export function tlsFailureHint(settings: SslSettings, failure: string): string | null {
  const where = settings.source === 'PGSSLMODE' ? 'PGSSLMODE' : "DATABASE_URL's sslmode";
  const guide = "(docs/operations.md, 'TLS to PostgreSQL')";
  if (settings.mode === 'disable') {
    if (!TLS_REQUIRED.test(failure)) return null;
    return `the server requires TLS and ${where}=disable refuses it: use sslmode=verify-full with the server's CA (sslrootcert=/path/to/ca.pem, or sslrootcert=system), or sslmode=require, which encrypts without verifying ${guide}`;
  }
  if (!/ssl|certificate|tls/i.test(failure)) return null;
  return `${where}=${settings.mode} asks for TLS: enable TLS on the server (or give the right sslrootcert), or choose another sslmode ${guide}`;
}
