import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

// scrypt parameters: N=2^15 keeps one verification near 50-100 ms on these machines, which is
// why Basic credentials are verified once and then cached (src/http/auth/basic-auth.ts).
// NOTE: the test suite makes thousands of users; under NODE_ENV=test only, TEST_SCRYPT_N (a
// power of two) may lower the cost of the hashes it makes. Every hash carries its own N, so a
// hash verifies the same whatever the setting; production never reads it.
const PARAMS = { N: testCost() ?? 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

function testCost(): number | null {
  if (process.env.NODE_ENV !== 'test' || !process.env.TEST_SCRYPT_N) return null;
  const n = Number(process.env.TEST_SCRYPT_N);
  return Number.isInteger(n) && n >= 2 && (n & (n - 1)) === 0 ? n : null;
}
const KEY_LENGTH = 64;

function derive(password: string, salt: Buffer, params: ScryptOptions, keyLength: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, keyLength, params, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** What is wrong with a password, or null: the one rule for new accounts and new passwords. */
export function passwordProblem(password: string): string | null {
  return password.length < 8 || password.length > 1024 ? 'must be 8-1024 characters' : null;
}

/** `scrypt$N$r$p$salt$hash`, base64 parts: the parameters travel with the hash so they can change later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS, KEY_LENGTH);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64'), key.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltB64, keyB64] = stored.split('$');
  if (scheme !== 'scrypt' || !keyB64) return false;
  const expected = Buffer.from(keyB64, 'base64');
  const actual = await derive(password, Buffer.from(saltB64, 'base64'), { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem }, expected.length);
  return timingSafeEqual(actual, expected);
}

/** A hash to verify against when the user does not exist, so timing does not reveal usernames. */
let dummyHash: Promise<string> | null = null;
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword(randomBytes(16).toString('hex'));
  return dummyHash;
}
