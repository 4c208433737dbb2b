import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The `X-Billing-Signature` value for a body sent at `unixSeconds`: `t=<seconds>,v1=<hex
 * HMAC-SHA256 of "<t>.<raw body>">`. Signing the timestamp with the body lets a receiver refuse
 * replays of an old, captured request (docs/delivery.md).
 */
export function signWebhookBody(secret: string, unixSeconds: number, rawBody: string): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${rawBody}`).digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}

/**
 * What a receiver does with the header: recompute the HMAC over the raw body, compare in constant
 * time, and refuse timestamps further than `toleranceSeconds` from its own clock.
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | null | undefined,
  rawBody: string,
  options: { nowSeconds: number; toleranceSeconds?: number },
): boolean {
  if (!header) return false;
  const parts = new Map<string, string[]>();
  for (const item of header.split(',')) {
    const at = item.indexOf('=');
    if (at <= 0) continue;
    const key = item.slice(0, at).trim();
    parts.set(key, [...(parts.get(key) ?? []), item.slice(at + 1).trim()]);
  }
  const t = parts.get('t')?.[0];
  if (!t || !/^\d+$/.test(t)) return false;
  if (Math.abs(options.nowSeconds - Number(t)) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(signWebhookBody(secret, Number(t), rawBody).split('v1=')[1], 'hex');
  // Any matching v1 value is enough, which leaves room for signing with two secrets during a rotation.
  return (parts.get('v1') ?? []).some((candidate) => {
    const given = Buffer.from(candidate, 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
