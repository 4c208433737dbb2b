import { createHash, randomUUID } from 'node:crypto';
import { raw, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { WebhookLog, type WebhookLogSource, type WebhookLogStatus } from '../../db/entities/webhook-log.js';
import { inCommitGroup } from '../../db/commit-groups.js';
import { isPostgres } from '../../db/dialect.js';
import { findOneHot, hotRows } from '../../db/hot-sql.js';
import { inHotTransaction, NOT_HERE } from '../../db/hot-transaction.js';
import { parseJsonExact } from '../../domain/exact-json.js';
import { verifySignature } from '../../gateway/signature.js';
import type { DataContext } from '../context.js';
import { applyGatewayEvent } from './apply-gateway-event.js';
import type { InvalidLogQuota } from './invalid-notification-quota.js';
import type { EventOutcome } from './event-outcome.js';
import { INVALID_PAYLOAD_EXCERPT_BYTES, utf8Prefix } from './payload-excerpt.js';
import { mayBePlain, settlePlainPayment } from './settle-plain-payment.js';
import { SUBSCRIPTION_ORDER_PREFIX, TOPUP_ORDER_PREFIX } from '../payments/order-id.js';
import { dedupKey, eventFromPayload, UnknownOrderError, type GatewayEvent } from './gateway-event.js';

/*
 * The one pipeline behind the webhook, `webhooks replay`, `payments sync` and the
 * subscriptions' sync/charge answers, in this order:
 *
 *   1. record: the raw payload (its SHA-256 too), the sender IP and its source;
 *   2. judge: readable and (for payloads the gateway pushed) correctly signed, else `invalid`,
 *      keeping only the first 4 KiB of the body and, from a source over its quota of invalid
 *      notifications (invalid-notification-quota.ts), nothing at all;
 *   3-5. claim the deduplication key on the log row, apply the effects (applyGatewayEvent,
 *      which also writes the notification entries), mark `processed`.
 *
 * A notification as it arrives (receiveNotification) does all of this in ONE transaction: its
 * log row is inserted already `processed` and holding the deduplication key, as the
 * transaction's first statement, then the effects follow, then one commit. On SQLite the
 * notifications that arrive meanwhile share the next transaction and its commit, each in a
 * savepoint of its own (src/db/commit-groups.ts): to each notification it is still all or
 * nothing. Nothing is acknowledged before that commit. When anything fails, the transaction
 * (or the notification's savepoint) rolls back as a whole
 * and the row is written again on its own with what happened (`duplicate`, `ignored`,
 * `failed`), in one statement; only if even that cannot be written does the caller answer 503
 * with nothing stored, and the gateway sends it again (docs/architecture.md, "The webhook").
 *
 * Exactly-once rests on the database, not on process memory: webhook_logs.dedup_key is unique,
 * so of all logs carrying the same key only one can ever commit as `processed`; a concurrent
 * second one fails its claim (PostgreSQL makes it wait for the first and then raises the
 * unique violation; SQLite serialises the writers) and becomes `duplicate`.
 *
 * Replay decision: a replay runs steps 2-5 again on the SAME log row and updates its status,
 * error, attempts and processed_at. The evidence (payload, ip_address, source, created_at) is
 * never rewritten, so the row stays what the gateway sent; only its processing state moves, and
 * `webhooks list --status failed` shows what is still left to fix. A row is only ever
 * (re)processed from `received`, `failed` or `invalid`, and the claim re-checks that in the
 * same UPDATE, so two replays (or a replay racing the live request) cannot apply it twice.
 */

/**
 * Log statuses from which steps 2-5 may run (again). `ignored` too: an operator who finds that
 * an ignored order was ours after all (a restored row) can replay it.
 */
export const REPLAYABLE_STATUSES: readonly WebhookLogStatus[] = ['received', 'failed', 'invalid', 'ignored'];

/** Sources whose payload came from our own authenticated call to the gateway, not from the internet. */
const TRUSTED_SOURCES: readonly WebhookLogSource[] = ['sync', 'charge'];

const SIGNED_FIELDS = ['order_id', 'transaction_status', 'status_code', 'gross_amount', 'signature_key'] as const;
const TRUSTED_FIELDS = ['order_id', 'transaction_status'] as const;

const MAX_ERROR_LENGTH = 2000;

export type NotificationResult =
  /** Effects applied; the log is `processed`. */
  | 'processed'
  /** Already processed under the same deduplication key; the log is `duplicate`. */
  | 'duplicate'
  /** Bad signature; the log is `invalid`. */
  | 'invalid'
  /** Not JSON, not an object, or required fields missing; the log is `invalid`. */
  | 'unreadable'
  /** Unknown order, amount mismatch or a database error; the log is `failed`, a retry may work. */
  | 'failed'
  /** The log was not in a processable status (already processed or a duplicate); nothing ran. */
  | 'skipped'
  /** An order this service never made; the log is `ignored` (a merchant account may be shared). */
  | 'ignored';

export interface NotificationOutcome {
  result: NotificationResult;
  /** The log as stored after this attempt. */
  log: WebhookLog;
  /** What the effects changed (empty unless processed). */
  changes: string[];
  /** Why it was not processed (the log's `error`), or null. */
  error: string | null;
  /** The event read from the payload, when it could be read and (for pushed payloads) its signature held. */
  event?: GatewayEvent;
}

/** An invalid notification answered but not stored: its source was over its quota. */
export interface DroppedNotification {
  result: 'invalid' | 'unreadable';
  log: null;
  changes: [];
  error: string;
}

export interface RecordInput {
  /** The body exactly as received (or the gateway answer, serialized, for sync/charge). */
  rawPayload: string;
  /** The body's bytes, when they may differ from rawPayload's UTF-8 (the webhook's); hashed for payload_sha256. */
  rawBytes?: Buffer;
  ip?: string | null;
  source: WebhookLogSource;
}

// PostgreSQL text cannot hold NUL; such a body is no JSON anyway, but it must still be stored.
const withoutNul = (s: string): string => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function normaliseIp(ip: string | null | undefined): string | null {
  if (!ip) return null;
  const plain = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice('::ffff:'.length) : ip;
  return clip(withoutNul(plain), 64);
}

type Reading = { ok: true; payload: Record<string, unknown> } | { ok: false; reason: string };

/** Judges whether a stored body is a notification we can read at all. */
export function readNotification(raw: string, required: readonly string[] = SIGNED_FIELDS): Reading {
  let value: unknown;
  try {
    // Exact numbers: an amount sent as a JSON number is compared as written, never rounded.
    value = parseJsonExact(raw);
  } catch (err) {
    return { ok: false, reason: `The body is not JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, reason: 'The body is not a JSON object.' };
  }
  const payload = value as Record<string, unknown>;
  const missing = required.filter((f) => typeof payload[f] !== 'string' || payload[f] === '');
  if (missing.length > 0) return { ok: false, reason: `Missing or not a string: ${missing.join(', ')}.` };
  return { ok: true, payload };
}

/** order_id and transaction_status for the log's own columns, read leniently before judging. */
function summarise(raw: string): { orderId: string | null; transactionStatus: string | null } {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { orderId: null, transactionStatus: null };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { orderId: null, transactionStatus: null };
  const v = value as Record<string, unknown>;
  const text = (x: unknown, max: number) => (typeof x === 'string' && x !== '' ? clip(withoutNul(x), max) : null);
  return { orderId: text(v.order_id, 100), transactionStatus: text(v.transaction_status, 50)?.toLowerCase() ?? null };
}

/** What a log row keeps of the notification as it arrived, whatever became of it. */
interface LogEvidence {
  orderId: string | null;
  transactionStatus: string | null;
  payload: string;
  payloadSha256: string;
  payloadTruncated: boolean;
  ipAddress: string | null;
  source: WebhookLogSource;
  createdAt: Date;
}

function evidenceOf(ctx: DataContext, input: RecordInput): LogEvidence {
  const payload = withoutNul(input.rawPayload);
  const payloadSha256 = createHash('sha256').update(input.rawBytes ?? input.rawPayload).digest('hex');
  return {
    ...summarise(payload),
    payload,
    payloadSha256,
    payloadTruncated: false,
    ipAddress: normaliseIp(input.ip),
    source: input.source,
    createdAt: ctx.clock.now(),
  };
}

/**
 * An invalid notification keeps the start of its body and the hash of the whole: enough to
 * recognise and investigate it, too little to fill the database with forged bodies.
 */
function excerptOf(evidence: LogEvidence): LogEvidence {
  const payload = utf8Prefix(evidence.payload, INVALID_PAYLOAD_EXCERPT_BYTES);
  return payload === evidence.payload ? evidence : { ...evidence, payload, payloadTruncated: true };
}

/**
 * The log row's INSERT, one fixed statement (prepared once per connection on both databases): it
 * is the claim inside every notification's transaction, where MikroORM's insert built and parsed
 * a new SQL text each time. `returning id` makes it a statement with rows, which hotRows keeps
 * prepared on PostgreSQL too.
 */
const INSERT_LOG =
  'insert into webhook_logs (id, order_id, transaction_status, payload, payload_sha256, payload_truncated, ip_address, status, error, attempts, source, dedup_key, processed_at, created_at, updated_at) ' +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) returning id';

/** One INSERT of a log row with its status (final, unless `received`). */
async function insertLog(
  em: EntityManager,
  evidence: LogEvidence,
  outcome: { status: WebhookLogStatus; error: string | null; dedupKey?: string; processedAt?: Date; attempts?: number },
): Promise<WebhookLog> {
  const log = Object.assign(new WebhookLog(), {
    ...evidence,
    id: randomUUID(),
    status: outcome.status,
    error: outcome.error === null ? null : clip(outcome.error, MAX_ERROR_LENGTH),
    attempts: outcome.attempts ?? 1,
    dedupKey: outcome.dedupKey ?? null,
    processedAt: outcome.processedAt ?? null,
    updatedAt: new Date(),
  });
  await hotRows(
    em,
    INSERT_LOG,
    [
      log.id, log.orderId, log.transactionStatus, log.payload, log.payloadSha256, log.payloadTruncated, log.ipAddress,
      log.status, log.error, log.attempts, log.source, log.dedupKey, log.processedAt, log.createdAt, log.updatedAt,
    ],
    { prepare: true },
  );
  return log;
}

/**
 * Step 1 alone: stores the payload as `received`, committed, nothing tried yet (the state a
 * replay starts from). Throws when the database cannot take it.
 */
export async function recordNotification(ctx: DataContext, input: RecordInput): Promise<WebhookLog> {
  const evidence = evidenceOf(ctx, input);
  const note = evidence.payload === input.rawPayload ? null : 'NUL characters in the body were stored as U+FFFD.';
  // Inside the caller's transaction when there is one: a dry-run sync records and rolls back (reconcile-payments.ts).
  return insertLog(forkOf(ctx), evidence, { status: 'received', error: note, attempts: 0 });
}

/**
 * A fresh entity manager for one step of the pipeline, inside the caller's transaction when
 * there is one: a dry-run replay (replay-webhook-logs.ts) runs the whole pipeline in a
 * transaction it rolls back, where each log's effects become a savepoint and its outcome is
 * written and read in that same transaction, exactly as a real replay would commit them.
 */
function forkOf(ctx: DataContext): EntityManager {
  return ctx.em.fork({ keepTransactionContext: true }) as EntityManager;
}

/** Thrown inside the effects transaction when another log already holds the deduplication key. */
class AlreadyClaimed extends Error {}

/** Runs the claim's write; another log holding the key surfaces as AlreadyClaimed. */
async function claim<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw new AlreadyClaimed();
    throw err;
  }
}

/** What an attempt that threw leaves on its log: a duplicate (naming the holder), ignored, or failed. */
async function failedAttempt(em: EntityManager, err: unknown, key: string): Promise<{ status: 'duplicate' | 'ignored' | 'failed'; error: string }> {
  if (err instanceof AlreadyClaimed) {
    const holder = await em.findOne(WebhookLog, { dedupKey: key }, { fields: ['id'] });
    return { status: 'duplicate', error: `Already processed as webhook log ${holder?.id ?? '(unknown)'} (${key}).` };
  }
  if (err instanceof UnknownOrderError) return { status: 'ignored', error: err.message };
  return { status: 'failed', error: describeFailure(err) };
}

/**
 * Sets the log's final status after an attempt, but only while the row is still processable: a
 * concurrent attempt that processed it wins. One conditional UPDATE (a write first, for SQLite).
 */
async function settleLog(ctx: DataContext, logId: string, status: WebhookLogStatus, error: string | null): Promise<void> {
  await forkOf(ctx).nativeUpdate(
    WebhookLog,
    { id: logId, status: { $in: [...REPLAYABLE_STATUSES] } },
    { status, error: error === null ? null : clip(error, MAX_ERROR_LENGTH), attempts: raw('attempts + 1'), updatedAt: new Date() },
  );
}

async function reload(ctx: DataContext, logId: string): Promise<WebhookLog> {
  const log = await findOneHot(forkOf(ctx), WebhookLog, 'select * from webhook_logs where id = ?', [logId]);
  if (!log) throw new Error(`webhook log ${logId} vanished`);
  return log;
}

/** Steps 3-5 in one transaction: claim the key, apply the effects, mark the log processed. */
async function applyOnce(ctx: DataContext, logId: string, event: GatewayEvent): Promise<NotificationOutcome> {
  const key = dedupKey(event);
  let changes: string[] | null;
  try {
    // Not even shaped like our order ids (at most 50 characters, SUB- or TOPUP-): not ours,
    // and not worth a deduplication claim (a huge order_id would not fit the key's column).
    if (!isOwnOrderIdShape(event.orderId)) throw new UnknownOrderError(event.orderId.slice(0, 60));
    changes = await forkOf(ctx).transactional(async (em: EntityManager) => {
      // The claim is the transaction's first statement and a write: SQLite takes its write lock
      // before reading anything, and PostgreSQL queues a concurrent claim of the same key here.
      const claimed = await claim(() =>
        em.nativeUpdate(WebhookLog, { id: logId, dedupKey: null, status: { $in: [...REPLAYABLE_STATUSES] } }, { dedupKey: key }),
      );
      if (claimed === 0) return null;
      const outcome = await applyInFreshTransaction({ em, config: ctx.config, clock: ctx.clock }, event);
      const at = ctx.clock.now();
      await em.nativeUpdate(WebhookLog, { id: logId }, { status: 'processed', error: null, attempts: raw('attempts + 1'), processedAt: at, updatedAt: new Date() });
      return outcome.changes;
    });
    if (changes === null) {
      // Another attempt took this very row meanwhile (a replay racing the live request).
      return { result: 'skipped', log: await reload(ctx, logId), changes: [], error: null };
    }
  } catch (err) {
    const { status, error } = await failedAttempt(forkOf(ctx), err, key);
    await settleLog(ctx, logId, status, error);
    const log = await reload(ctx, logId);
    // A concurrent attempt that settled this row first wins; a failure is reported as such.
    const result = status === 'failed' || log.status === status ? status : 'skipped';
    return { result, log, changes: [], error };
  }
  return { result: 'processed', log: await reload(ctx, logId), changes, error: null };
}

/**
 * The effects, in a transaction whose entity manager holds no entity yet: the plain settlement
 * by set-based statements when it applies (settle-plain-payment.ts), else applyGatewayEvent,
 * whose entities are flushed here, inside the transaction.
 */
async function applyInFreshTransaction(ctx: DataContext, event: GatewayEvent): Promise<EventOutcome> {
  const plain = await settlePlainPayment(ctx, event);
  if (plain) return plain;
  const outcome = await applyGatewayEvent(ctx, event);
  await ctx.em.flush();
  return outcome;
}

/**
 * Steps 3-5 of a notification as it arrives, in one transaction: the log inserted `processed`
 * and holding the key, then the effects. A plain settlement on PostgreSQL runs in a hot
 * transaction (hot-transaction.ts: no knex transaction, a webhook's main cost in garbage); when
 * the rows turn out not to be the plain case, it rolls back, log row and all, and everything
 * runs again in an ORM transaction, which is what every other notification takes directly.
 */
async function claimAndApply(ctx: DataContext, evidence: LogEvidence, event: GatewayEvent, key: string): Promise<{ log: WebhookLog; changes: string[] }> {
  const claimThen = async <T>(em: EntityManager, apply: (ctx: DataContext) => Promise<T>) => {
    // The claim is the first statement and a write: SQLite takes its write lock before reading
    // anything, and PostgreSQL queues a concurrent claim of the same key behind this one.
    const log = await claim(() => insertLog(em, evidence, { status: 'processed', error: null, dedupKey: key, processedAt: ctx.clock.now() }));
    return { log, outcome: await apply({ em, config: ctx.config, clock: ctx.clock }) };
  };
  if (isPostgres(ctx.em) && mayBePlain(event)) {
    const plain = await inHotTransaction(ctx.em, async (em) => {
      const { log, outcome } = await claimThen(em, (fresh) => settlePlainPayment(fresh, event));
      return outcome ? { log, changes: outcome.changes } : NOT_HERE;
    });
    if (plain !== NOT_HERE) return plain;
  }
  return inCommitGroup(ctx.em, async (em) => {
    const { log, outcome } = await claimThen(em, (fresh) => applyInFreshTransaction(fresh, event));
    return { log, changes: outcome.changes };
  });
}

function isOwnOrderIdShape(orderId: string): boolean {
  return orderId.length <= 50 && (orderId.startsWith(SUBSCRIPTION_ORDER_PREFIX) || orderId.startsWith(TOPUP_ORDER_PREFIX));
}

function describeFailure(err: unknown): string {
  if (err instanceof Error) {
    const name = err.name === 'Error' || err.name === 'GatewayEventError' || err.name === 'DomainError' ? '' : `${err.name}: `;
    return `${name}${err.message}`;
  }
  return String(err);
}

type Judgement = { ok: true; event: GatewayEvent } | { ok: false; result: 'unreadable' | 'invalid'; reason: string };

/** Step 2: readable, and (for payloads the gateway pushed) signed with the CURRENT server key. */
function judge(ctx: DataContext, log: Pick<WebhookLog, 'source' | 'payload' | 'payloadTruncated'>): Judgement {
  // Only the start of the body was kept (it was invalid when it arrived): nothing to judge again.
  if (log.payloadTruncated) return { ok: false, result: 'invalid', reason: `Only the first ${INVALID_PAYLOAD_EXCERPT_BYTES / 1024} KiB of this invalid body were kept; it cannot be processed.` };
  const trusted = TRUSTED_SOURCES.includes(log.source);
  const reading = readNotification(log.payload, trusted ? TRUSTED_FIELDS : SIGNED_FIELDS);
  if (!reading.ok) return { ok: false, result: 'unreadable', reason: reading.reason };
  if (!trusted && !verifySignature(reading.payload, ctx.config.gateway.serverKey)) {
    return { ok: false, result: 'invalid', reason: 'The signature_key does not match order_id + status_code + gross_amount signed with the server key.' };
  }
  return { ok: true, event: eventFromPayload(reading.payload, { verified: trusted }) };
}

/**
 * Steps 2-5 on a stored log: judge the payload, deduplicate, apply. Only `received`, `failed`
 * and `invalid` logs are processed; any other is left as it is (`skipped`). Throws only when the
 * database is unreachable even for recording the outcome.
 */
export async function processRecordedNotification(ctx: DataContext, logId: string, recorded?: WebhookLog): Promise<NotificationOutcome> {
  const log = recorded ?? (await reload(ctx, logId));
  if (!REPLAYABLE_STATUSES.includes(log.status)) return { result: 'skipped', log, changes: [], error: null };
  const judgement = judge(ctx, log);
  if (!judgement.ok) {
    await settleLog(ctx, logId, 'invalid', judgement.reason);
    return { result: judgement.result, log: await reload(ctx, logId), changes: [], error: judgement.reason };
  }
  return { ...(await applyOnce(ctx, logId, judgement.event)), event: judgement.event };
}

/** Whether an event would be processed or is a duplicate, without writing anything. */
export async function previewGatewayEvent(ctx: DataContext, event: GatewayEvent): Promise<{ result: 'would_process' | 'duplicate'; error: string | null }> {
  const holder = await forkOf(ctx).findOne(WebhookLog, { dedupKey: dedupKey(event) });
  if (holder) return { result: 'duplicate', error: `Already processed as webhook log ${holder.id}.` };
  return { result: 'would_process', error: null };
}

/**
 * The webhook and the gateway answers: steps 1-5 in one transaction on the happy path (see the
 * top of this file). An invalid notification is stored as an excerpt, and not at all when its
 * source is over `invalidQuota` (the webhook's; sync and charge answers have none). Throws only
 * when the database cannot store even the outcome; nothing was then stored, and the caller must
 * not acknowledge.
 */
export async function receiveNotification(ctx: DataContext, input: RecordInput): Promise<NotificationOutcome>;
export async function receiveNotification(
  ctx: DataContext,
  input: RecordInput,
  invalidQuota: InvalidLogQuota,
): Promise<NotificationOutcome | DroppedNotification>;
export async function receiveNotification(
  ctx: DataContext,
  input: RecordInput,
  invalidQuota?: InvalidLogQuota,
): Promise<NotificationOutcome | DroppedNotification> {
  const evidence = evidenceOf(ctx, input);
  const judgement = judge(ctx, evidence);
  if (!judgement.ok) {
    if (invalidQuota && !invalidQuota.take(evidence.ipAddress ?? 'unknown')) {
      return { result: judgement.result, log: null, changes: [], error: judgement.reason };
    }
    const log = await insertLog(ctx.em.fork(), excerptOf(evidence), { status: 'invalid', error: judgement.reason });
    return { result: judgement.result, log, changes: [], error: judgement.reason };
  }
  const event = judgement.event;
  const key = dedupKey(event);
  try {
    // Not even shaped like our order ids: not ours, and not worth a deduplication claim.
    if (!isOwnOrderIdShape(event.orderId)) throw new UnknownOrderError(event.orderId.slice(0, 60));
    const applied = await claimAndApply(ctx, evidence, event, key);
    return { result: 'processed', ...applied, error: null, event };
  } catch (err) {
    // The transaction rolled back whole: the row is written again, alone, with what happened.
    const em = ctx.em.fork();
    const { status, error } = await failedAttempt(em, err, key);
    return { result: status, log: await insertLog(em, evidence, { status, error }), changes: [], error, event };
  }
}

export interface GatewayEventInput {
  /** What the gateway answered (eventFromTransaction(status or charge answer)). */
  event: GatewayEvent;
  source: Extract<WebhookLogSource, 'sync' | 'charge' | 'gateway'>;
  /**
   * Stored as the log's payload, and what is applied (so a replay applies the same): the payload
   * the event was read from. Default: event.raw with its order_id and transaction_status.
   */
  rawPayload?: string;
  ip?: string | null;
}

/**
 * For code that learnt a gateway status by asking (sync, reconciliation, a charge answer): logs
 * it with its source and applies it through the same deduplication and effects as a webhook, in
 * one transaction. No signature check for `sync`/`charge` (the answer came over our authenticated
 * call). Commits on its own, so it must not be called inside a transaction, and rows it applies
 * to must already be committed. Returns the outcome; never throws for a processing failure
 * (`result: 'failed'` with the reason), only when the database cannot record anything.
 */
export async function recordAndApplyGatewayEvent(ctx: DataContext, input: GatewayEventInput): Promise<NotificationOutcome> {
  if (ctx.em.isInTransaction()) throw new Error('recordAndApplyGatewayEvent commits on its own; call it outside a transaction');
  const rawPayload =
    input.rawPayload ??
    JSON.stringify({ ...input.event.raw, order_id: input.event.orderId, transaction_status: input.event.transactionStatus });
  return receiveNotification(ctx, { rawPayload, ip: input.ip ?? null, source: input.source });
}
