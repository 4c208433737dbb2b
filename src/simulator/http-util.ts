import { createHash, timingSafeEqual } from 'node:crypto';
import type Koa from 'koa';

export type BodyResult = { ok: true; value: unknown } | { ok: false; reason: 'too_large' | 'malformed' };

/**
 * Reads the JSON body ourselves: Midtrans clients send a literal `null` for actions, which
 * strict body parsers reject. An empty body reads as null.
 */
export async function readJsonBody(ctx: Koa.Context, limitBytes: number): Promise<BodyResult> {
  const req = ctx.req;
  if (req.readableEnded) {
    // A body parser mounted before the simulator already consumed the stream.
    const parsed = (ctx.request as { body?: unknown }).body;
    return { ok: true, value: parsed === undefined ? null : parsed };
  }
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limitBytes) return tooLarge(ctx);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    size += buf.length;
    if (size > limitBytes) return tooLarge(ctx);
    chunks.push(buf);
  }
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') return { ok: true, value: null };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, reason: 'malformed' };
  }
}

function tooLarge(ctx: Koa.Context): BodyResult {
  // The rest of the body is not read; closing the connection stops the client sending it.
  ctx.set('Connection', 'close');
  return { ok: false, reason: 'too_large' };
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** HTTP Basic with the server key as user name and an empty password. */
export function isAuthorized(header: string, serverKey: string): boolean {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) return false;
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const user = decoded.slice(0, colon);
  const password = decoded.slice(colon + 1);
  return timingSafeEqual(digest(user), digest(serverKey)) && password === '';
}
