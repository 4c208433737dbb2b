import type { Context } from 'koa';
import { DomainError } from '../domain/errors.js';
import { parseJsonExact } from '../domain/exact-json.js';

/** Reads the raw request body as text, refusing more than `limit` bytes (413). */
export async function readRawBody(ctx: Context, limit: number): Promise<string> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) throw new DomainError('payload_too_large', `The body is larger than ${limit} bytes.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new DomainError('payload_too_large', `The body is larger than ${limit} bytes.`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
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
