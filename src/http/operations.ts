import type { Context } from 'koa';
import type { User } from '../db/entities/user.js';
import type { ServiceContext } from '../services/context.js';
import type { components, operations } from './generated/openapi.js';

export type OperationId = keyof operations;
export type Schemas = components['schemas'];

type JsonContent<T> = T extends { content: { 'application/json': infer B } } ? B : undefined;
type Params<K extends OperationId, Where extends 'query' | 'path'> = operations[K]['parameters'][Where] extends infer P
  ? P extends never | undefined
    ? Record<string, never>
    : NonNullable<P>
  : never;

export type RequestBody<K extends OperationId> = operations[K] extends { requestBody?: infer R } ? JsonContent<NonNullable<R>> : undefined;

type SuccessStatus = 200 | 201 | 202 | 204 | 304;

/** A JSON response's typed body; a PDF response's bytes. */
type ResponseBody<T> = T extends { content: { 'application/pdf': unknown } } ? Buffer : JsonContent<T>;
/** A file's answer names its content type (and e.g. Content-Disposition); JSON needs neither. */
type FileFields<T> = T extends { content: { 'application/pdf': unknown } }
  ? { contentType: 'application/pdf'; headers?: Record<string, string> }
  : { contentType?: undefined; headers?: undefined };

/** What a handler may answer: one of the operation's documented success statuses and its body. */
export type OperationResult<K extends OperationId> = {
  [S in keyof operations[K]['responses'] & SuccessStatus]: { status: S; body: ResponseBody<operations[K]['responses'][S]> } & FileFields<
    operations[K]['responses'][S]
  > &
    AnswerLifetime;
}[keyof operations[K]['responses'] & SuccessStatus];

interface AnswerLifetime {
  /**
   * Set by a polled read that may be answered again from memory (src/http/answer-cache.ts): the
   * instant (epoch ms, the service's clock) until which the same rows give the same answer;
   * Infinity when nothing in it depends on the time. Unset: never kept.
   */
  freshUntil?: number;
}

export interface OperationRequest<K extends OperationId> {
  koa: Context;
  query: Params<K, 'query'>;
  path: Params<K, 'path'>;
  body: RequestBody<K>;
  /** The authenticated user; null only on public operations. */
  user: User | null;
  services: ServiceContext;
}

export type OperationHandler<K extends OperationId> = (req: OperationRequest<K>) => Promise<OperationResult<K>>;

export type OperationHandlers = { [K in OperationId]?: OperationHandler<K> };

/** The user of an operation whose contract requires authentication. */
export function requireUser<K extends OperationId>(req: OperationRequest<K>): User {
  if (!req.user) throw new Error('an authenticated operation ran without a user');
  return req.user;
}

/** requireUser's id, without making the user's entity when authentication read plain fields (the hot reads). */
export function requireUserId<K extends OperationId>(req: OperationRequest<K>): string {
  return req.koa.state.userFields?.id ?? requireUser(req).id;
}
