import { createHash, hkdfSync, createHmac, timingSafeEqual } from 'node:crypto';
import { developmentSessionSecret, type Config } from '../../config.js';

/**
 * An invoice's hosted page lives at `/pay/inv_<id><mac>/`: the invoice's id (16 bytes,
 * base64url) and an HMAC of it (16 bytes) under a key derived from SESSION_SECRET. Nothing is
 * stored: the link is the same on every read of the invoice, costs no row, cannot be guessed
 * for another invoice, and what it shows follows the invoice (payable while open, then "paid"
 * or "nothing due").
 */
export const INVOICE_TOKEN = /^inv_([A-Za-z0-9_-]{22})([A-Za-z0-9_-]{22})$/;

/** Derived keys by secret: one HKDF per secret and process. */
const keys = new Map<string, Buffer>();
/** The development secret (no SESSION_SECRET), once per database for the life of the process. */
const devSecrets = new Map<string, string>();

function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    // A key of its own: the session cookies' and forms' keys are never used for this link.
    key = Buffer.from(hkdfSync('sha256', secret, 'billing', 'invoice page link', 32));
    keys.set(secret, key);
  }
  return key;
}

/** The secrets links are checked against: every SESSION_SECRET (the first signs), so a rotation keeps the links made before it. */
function secretsOf(config: Pick<Config, 'sessionSecrets' | 'databaseUrl'>): string[] {
  if (config.sessionSecrets.length > 0) return config.sessionSecrets;
  let secret = devSecrets.get(config.databaseUrl);
  if (!secret) {
    secret = developmentSessionSecret(config.databaseUrl);
    devSecrets.set(config.databaseUrl, secret);
  }
  return [secret];
}

const idBytes = (invoiceId: string): Buffer => Buffer.from(invoiceId.replace(/-/g, ''), 'hex');
const mac = (secret: string, id: Buffer): Buffer => createHmac('sha256', keyOf(secret)).update(id).digest().subarray(0, 16);

/** The token naming an invoice's page. */
export function invoiceToken(config: Pick<Config, 'sessionSecrets' | 'databaseUrl'>, invoiceId: string): string {
  const id = idBytes(invoiceId);
  return `inv_${id.toString('base64url')}${mac(secretsOf(config)[0]!, id).toString('base64url')}`;
}

/** The page's path, `/pay/inv_…/`. */
export const invoicePagePath = (config: Pick<Config, 'sessionSecrets' | 'databaseUrl'>, invoiceId: string): string => `/pay/${invoiceToken(config, invoiceId)}/`;

/**
 * The page's address on PUBLIC_URL (outside production, the server fills it in with its own
 * address), as every other hosted link is made; never on a request's Host header.
 */
export function invoicePageUrl(config: Config, invoiceId: string): string {
  return `${config.hosted.publicUrl ?? `http://${config.host}:${config.port}`}${invoicePagePath(config, invoiceId)}`;
}

/** The invoice a token names, or null for anything forged, altered or made for another invoice (compared in constant time). */
export function invoiceOfToken(config: Pick<Config, 'sessionSecrets' | 'databaseUrl'>, token: string): string | null {
  const m = INVOICE_TOKEN.exec(token);
  if (!m) return null;
  const id = Buffer.from(m[1]!, 'base64url');
  // One spelling per link: a last character differing only in its unused bits names no page.
  if (id.length !== 16 || id.toString('base64url') !== m[1]) return null;
  const given = Buffer.from(m[2]!, 'base64url');
  if (given.length !== 16 || given.toString('base64url') !== m[2]) return null;
  const valid = secretsOf(config).some((secret) => timingSafeEqual(mac(secret, id), given));
  if (!valid) return null;
  const hex = id.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What an invoice page's claim row is stored under (unique): the invoice, whatever key signed the link. */
export const invoiceClaimHash = (invoiceId: string): string => createHash('sha256').update(`invoice-page:${invoiceId}`).digest('hex');
