import { createHash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { IdempotencyRecord } from '../db/entities/infrastructure.js';
import type { Orm } from '../db/orm.js';
import { DomainError } from '../domain/errors.js';
import { toProblem } from './problem.js';

const WINDOW_MS = 24 * 60 * 60 * 1000;
/**
 * How long a key stays reserved for a request in progress. Far longer than any request takes
 * (a few gateway calls, each bounded by GATEWAY_TIMEOUT_MS), so a reservation this old belongs to
 * a process that died mid-request: the key is then taken over and the request runs again.
 */
const IN_PROGRESS_LEASE_MS = 5 * 60 * 1000;

export interface StoredResponse {
  status: number;
  contentType: string;
  body: unknown;
}

export function requestFingerprint(method: string, path: string, rawBody: string): string {
  return createHash('sha256').update(`${method}\n${path}\n${rawBody}`).digest('hex');
}

/**
 * `Idempotency-Key` for POSTs: the same key from the same user with the same
 * request within 24 hours replays the first response and does nothing again; another request
 * under the same key answers 422. A failure the client may retry (5xx, conflicts) is not
 * remembered, so the retry runs for real. Records live in the database, so every server process
 * honours them.
 */
export async function withIdempotency(
  orm: Orm,
  scope: { userId: string; key: string; fingerprint: string; now: Date },
  run: () => Promise<StoredResponse>,
): Promise<StoredResponse> {
  const em = orm.em.fork();
  const claim = async (): Promise<StoredResponse | null> => {
    const existing = await em.findOne(IdempotencyRecord, { userId: scope.userId, key: scope.key }, { refresh: true });
    if (existing && existing.createdAt.getTime() + WINDOW_MS <= scope.now.getTime()) {
      await em.nativeDelete(IdempotencyRecord, { id: existing.id });
    } else if (existing) {
      if (existing.requestHash !== scope.fingerprint) {
        throw new DomainError('idempotency_key_reused', 'This Idempotency-Key was used with a different request.');
      }
      if (existing.state === 'done' && existing.responseBody !== null) {
        return JSON.parse(existing.responseBody) as StoredResponse;
      }
      if (existing.createdAt.getTime() + IN_PROGRESS_LEASE_MS > scope.now.getTime()) {
        throw new DomainError('conflict', 'A request with this Idempotency-Key is still in progress.');
      }
      // Abandoned: of two retries taking it over at once, one deletes it and the other finds it gone.
      await em.nativeDelete(IdempotencyRecord, { id: existing.id, state: 'in_progress' });
    }
    em.create(IdempotencyRecord, {
      userId: scope.userId,
      key: scope.key,
      requestHash: scope.fingerprint,
      state: 'in_progress',
      createdAt: scope.now,
    } as IdempotencyRecord);
    await em.flush();
    return null;
  };

  let replay: StoredResponse | null;
  try {
    replay = await claim();
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    em.clear();
    replay = await claim(); // a concurrent request claimed the key first
  }
  if (replay) return replay;

  const record = await em.findOneOrFail(IdempotencyRecord, { userId: scope.userId, key: scope.key });
  let response: StoredResponse;
  try {
    response = await run();
  } catch (err) {
    const p = toProblem(err);
    if (!p || p.status >= 500 || p.status === 409 || p.status === 429) {
      await em.nativeDelete(IdempotencyRecord, { id: record.id });
      throw err;
    }
    response = { status: p.status, contentType: 'application/problem+json', body: p };
  }
  record.state = 'done';
  record.responseStatus = response.status;
  record.responseBody = JSON.stringify(response);
  await em.flush();
  return response;
}
