import { createHash, randomInt, randomUUID } from 'node:crypto';

export function randomDigits(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += String(randomInt(10));
  return out;
}

export function newId(): string {
  return randomUUID();
}

export function randomToken(bytes = 12): string {
  return randomUUID().replace(/-/g, '').slice(0, bytes * 2);
}

/** Digits that stay the same for a seed, so repeated answers about one transaction agree. */
export function stableDigits(seed: string, n: number): string {
  const hex = createHash('sha256').update(seed).digest('hex');
  let out = '';
  for (let i = 0; out.length < n; i++) out += String(parseInt(hex.slice((i * 2) % 64, (i * 2) % 64 + 2), 16) % 10);
  return out;
}
