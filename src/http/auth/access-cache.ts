import type { EntityManager } from '@mikro-orm/knex';
import type { Context } from 'koa';
import { isPostgres, sessionUserIdSql } from '../../db/dialect.js';
import { User } from '../../db/entities/user.js';
import { hotRows } from '../../db/hot-sql.js';
import { rowReader, toDate } from '../../db/row-fields.js';
import type { Config } from '../../config.js';
import type { Clock } from '../../domain/clock.js';
import { paidAccessEndsAtFor } from '../../services/subscriptions/has-access.js';
import { USER_FIELDS, type UserFields } from '../serializers.js';

/**
 * Per-process memory of what authenticating a request and checking its access found (session
 * rows, user rows, "has access until T"), each kept with the user's access version: a counter
 * that database triggers raise on every change to the user's subscriptions, payments, invoices,
 * their user row or one of their sessions, whoever writes it (migrations/…/Migration20261124001457.ts
 * and Migration20261203080000.ts).
 *
 * NOTE: a remembered answer is used only under the version it was read with, and the version
 * is read first, or in the same statement as the data, never after it: a change committed in
 * between then shows as a newer version at the next read, never as stale data under a new
 * version. The version itself (one primary-key lookup of a small table) is read again once the
 * one this process holds is older than `recheckMs` (ACCESS_RECHECK_MS, default 1 s; 0 = every
 * request), and forgotten at once whenever this process handles a write. So a logout, a session
 * purge, a cancellation or a lapse stops access at this process's next request when it went
 * through this process, and within `recheckMs` when another process, the CLI or SQL made it.
 * Reading it on every request was a third of an authenticated read's cost (bench/README.md).
 * An access answer also depends on the clock (src/domain/paid-access.ts): a granting answer is
 * kept until the instant the rule says it ends (the period end plus ACCESS_GRACE_MINUTES, or an
 * open renewal invoice's due instant), on the service's clock, whether or not a billing pass
 * has run by then. A refusal can only turn into access by a change, which the version shows.
 */

/** What the access answer needs besides the database: the rules' settings and the service's clock. */
export interface AccessClock {
  config: Pick<Config, 'accessGraceMinutes' | 'renewalDueDays'>;
  clock: Clock;
}

/** The version a request has read for its user: later steps of the same request reuse it. */
interface RequestVersion {
  userId: string;
  version: string;
}

declare module 'koa' {
  interface DefaultState {
    accessVersion?: RequestVersion;
    /** The authenticated user's wire fields, when they came from the cache or a row. */
    userFields?: UserFields;
  }
}

interface SessionEntry {
  userId: string;
  version: string;
  data: string;
  expiresAt: number;
}

interface UserEntry {
  version: string;
  row: Record<string, unknown>;
  fields: UserFields;
}

interface VersionEntry {
  version: string;
  /** Epoch ms when it was read. */
  readAt: number;
}

interface AccessEntry {
  version: string;
  granted: boolean;
  /** Epoch ms (on the service's clock) from which the answer is read again. */
  until: number;
}

/** A Map that forgets its oldest entry beyond `max` entries (memory stays bounded under any load). */
class BoundedMap<V> extends Map<string, V> {
  constructor(private readonly max: number) {
    super();
  }

  override set(key: string, value: V): this {
    if (!this.has(key) && this.size >= this.max) {
      const oldest = this.keys().next().value;
      if (oldest !== undefined) this.delete(oldest);
    }
    return super.set(key, value);
  }
}

/**
 * The access_versions row that counts changes to the plan catalogue (a plan's name or price is
 * part of a subscription's answer); database triggers raise it (migrations/…/Migration20261203080000.ts).
 * No user id has this shape.
 */
export const CATALOGUE_VERSION_KEY = '*plans*';

/** A user's version and the catalogue's, as read together. */
export interface AnswerVersions {
  user: string;
  catalogue: string;
}

const toVersion = (v: unknown): string => (v === null || v === undefined ? '0' : String(v));

/** The version the rest of this request uses for `userId` (one request never reads it twice). */
function useForRequest(ctx: Context | undefined, userId: string, version: string): void {
  if (ctx) ctx.state.accessVersion = { userId, version };
}

export class AccessCache {
  private readonly sessions: BoundedMap<SessionEntry>;
  private readonly users: BoundedMap<UserEntry>;
  private readonly access: BoundedMap<AccessEntry>;
  private readonly versions: BoundedMap<VersionEntry>;

  /** `recheckMs`: how long a version read from the database is trusted (0: one request). */
  constructor(
    private readonly recheckMs: number,
    private readonly rules: AccessClock,
    maxEntries = 10_000,
  ) {
    this.sessions = new BoundedMap(maxEntries);
    this.users = new BoundedMap(maxEntries);
    this.access = new BoundedMap(maxEntries);
    this.versions = new BoundedMap(maxEntries);
  }

  /** The user's access version now (0 before anything about them ever changed). */
  async readVersion(em: EntityManager, userId: string): Promise<string> {
    const rows = await hotRows<{ version: unknown }>(em, 'select version from access_versions where user_id = ?', [userId], { prepare: true });
    return toVersion(rows[0]?.version);
  }

  /**
   * The user's version and the plan catalogue's, read now from the database in one statement
   * (never from memory): what the answer cache keeps a polled read's answer under.
   */
  async answerVersions(em: EntityManager, userId: string): Promise<AnswerVersions> {
    const rows = await hotRows<{ user_id: unknown; version: unknown }>(
      em,
      'select user_id, version from access_versions where user_id in (?, ?)',
      [userId, CATALOGUE_VERSION_KEY],
      { prepare: true },
    );
    const of = (key: string) => toVersion(rows.find((r) => r.user_id === key)?.version);
    return { user: of(userId), catalogue: of(CATALOGUE_VERSION_KEY) };
  }

  /** This process wrote to the database: versions it holds may be behind; read them again. */
  forgetVersions(): void {
    this.versions.clear();
    this.generation++;
  }

  /**
   * Counts forgetVersions calls. NOTE: a version read that began before a write of this process
   * was answered may come back after the forgetting; it still serves its own request, but it
   * is not kept for the next ones.
   */
  private generation = 0;

  /** `version` was read from the database for `userId` by a read begun at `generation`. */
  private remember(userId: string, version: string, generation: number, ctx?: Context): void {
    if (this.recheckMs > 0 && generation === this.generation) this.versions.set(userId, { version, readAt: Date.now() });
    useForRequest(ctx, userId, version);
  }

  /** The version this request read for `userId`, one read less than `recheckMs` ago, or a fresh read. */
  private async versionFor(em: EntityManager, userId: string, ctx?: Context): Promise<string> {
    const known = ctx?.state.accessVersion;
    if (known && known.userId === userId) return known.version;
    const held = this.versions.get(userId);
    if (held && Date.now() - held.readAt < this.recheckMs) {
      useForRequest(ctx, userId, held.version);
      return held.version;
    }
    const generation = this.generation;
    const version = await this.readVersion(em, userId);
    this.remember(userId, version, generation, ctx);
    return version;
  }

  /** koa-session's store read: the session's data, or undefined when it is gone or expired. */
  async session(em: EntityManager, key: string, ctx?: Context): Promise<Record<string, unknown> | undefined> {
    const cached = this.sessions.get(key);
    if (cached && cached.version === (await this.versionFor(em, cached.userId, ctx))) {
      return cached.expiresAt > Date.now() ? (JSON.parse(cached.data) as Record<string, unknown>) : undefined;
    }
    // The row and its user's version in one statement: one snapshot.
    const userIdOf = sessionUserIdSql(em, 's.data');
    const generation = this.generation;
    const [row] = await hotRows<{ data: string; expires_at: unknown; user_id: unknown; version: unknown }>(
      em,
      `select s.data, s.expires_at, ${userIdOf} as user_id, v.version from sessions s left join access_versions v on v.user_id = ${userIdOf} where s.id = ?`,
      [key],
      { prepare: true },
    );
    this.sessions.delete(key);
    if (!row) return undefined;
    const expiresAt = toDate(row.expires_at)?.getTime() ?? 0;
    if (typeof row.user_id === 'string') {
      const version = toVersion(row.version);
      this.sessions.set(key, { userId: row.user_id, version, data: row.data, expiresAt });
      this.remember(row.user_id, version, generation, ctx);
    }
    return expiresAt > Date.now() ? (JSON.parse(row.data) as Record<string, unknown>) : undefined;
  }

  /** This process wrote or removed the session: forget it at once (other processes see the version). */
  forgetSession(key: string): void {
    this.sessions.delete(key);
  }

  /**
   * The user by id: their wire fields, and `entity()`, which maps them into a fresh entity
   * manager (only operations that use the entity pay for it); null when there is none.
   */
  async user(
    em: EntityManager,
    userId: string,
    ctx?: Context,
  ): Promise<{ entity: () => User; fields: UserFields; passwordHash: string; disabled: boolean } | null> {
    let entry = this.users.get(userId);
    if (!entry || entry.version !== (await this.versionFor(em, userId, ctx))) {
      this.users.delete(userId);
      const idText = isPostgres(em) ? 'u.id::text' : 'u.id';
      const generation = this.generation;
      const rows = await hotRows(em, `select u.*, v.version as access_version from users u left join access_versions v on v.user_id = ${idText} where u.id = ?`, [userId]);
      if (rows.length === 0) return null;
      const { access_version: version, ...row } = rows[0];
      entry = { version: toVersion(version), row, fields: rowReader<UserFields>(em, User, USER_FIELDS, 'u').read(row) };
      this.users.set(userId, entry);
      this.remember(userId, entry.version, generation, ctx);
    }
    const row = entry.row;
    return { entity: () => em.fork().map(User, { ...row }), fields: entry.fields, passwordHash: String(row.password_hash), disabled: row.disabled_at != null };
  }

  /** Whether a paid period of the user's subscription covers now: no query while the version and the answer stand. */
  async hasAccess(em: EntityManager, userId: string, ctx?: Context): Promise<boolean> {
    const version = await this.versionFor(em, userId, ctx);
    const now = this.rules.clock.now().getTime();
    const cached = this.access.get(userId);
    if (cached && cached.version === version && now < cached.until) return cached.granted;
    const endsAt = await paidAccessEndsAtFor({ em, config: this.rules.config }, userId);
    const granted = now < endsAt;
    // NOTE: a grant changes to a refusal at `endsAt`; a refusal stands until the version moves.
    this.access.set(userId, { version, granted, until: granted ? endsAt : Number.POSITIVE_INFINITY });
    return granted;
  }

}
