import type { Context } from 'koa';
import { DomainError } from '../domain/errors.js';
import { parseJsonExact } from '../domain/exact-json.js';
import { WEBHOOK_MAX_BODY_BYTES } from './input-limits.js';

/**
 * Reads the raw request body, refusing more than `limit` bytes (413) as soon as the declared
 * length or the bytes read pass it: at most `limit` plus one chunk is ever held. The rest of a
 * refused body is read and discarded, never kept: a connection left with unread body bytes
 * would hang the client's next request on it (keep-alive).
 */
export function readRawBytes(ctx: Context, limit: number): Promise<Buffer> {
  const tooLarge = () => new DomainError('payload_too_large', `The body is larger than ${limit} bytes.`);
  const req = ctx.req;
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) {
    req.resume();
    return Promise.reject(tooLarge());
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      done();
      chunks.length = 0;
      req.resume();
      reject(tooLarge());
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const done = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

export type ParsedBody = { ok: true; value: unknown } | { ok: false; error: string };

/** Parses a JSON body, numbers read exactly (src/domain/exact-json.ts); an empty body is `undefined`. */
export function parseJsonBody(raw: string): ParsedBody {
  if (raw.trim() === '') return { ok: true, value: undefined };
  try {
    return { ok: true, value: parseJsonExact(raw) };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/**
 * The webhook's body, kept raw whatever it holds: as text (logged) and as bytes (hashed for its
 * log's payload_sha256), under its own limit (never above the general one).
 */
export async function readWebhookBody(ctx: Context, maxBodyBytes: number): Promise<void> {
  const bytes = await readRawBytes(ctx, Math.min(WEBHOOK_MAX_BODY_BYTES, maxBodyBytes));
  ctx.state.rawBody = bytes.toString('utf8');
  ctx.state.rawBodyBytes = bytes;
}
