import type { EntityManager } from '@mikro-orm/knex';
import type { Orm } from '../../db/orm.js';

/**
 * Failed logins, counted so that guessing is slow and a customer is never locked out by anyone
 * else's failures. Many customers may share one address (an office proxy, a mobile carrier's
 * NAT), so no count that other usernames feed ever refuses a correct password. Counters live in
 * the database, so every process sees them:
 *
 * - per (username, address): `limit` failures within the window, then 429 for that username from
 *   that address only, before anything is compared (the password stays guarded against guessing);
 * - per username, across addresses: never a refusal, only a slow-down of every attempt at that
 *   username, growing with its failures beyond `limit` and bounded by `MAX_SLOWDOWN_MS`;
 * - per address, across usernames (spraying, credential stuffing): failures only, counted after
 *   the compare. Beyond ten times `limit` the address's wrong passwords answer 429 after a pause
 *   (`SPRAY_PAUSE_MS`) instead of 401, while a correct password from it is answered at once as
 *   usual. Each of an attacker's connections then gets one guess per pause, and a customer
 *   behind the same address is neither refused nor slowed.
 *
 * The address is the one the connection came from; `X-Forwarded-For` counts only with
 * TRUST_PROXY, and then only its last entry, the one the trusted balancer appended (app.ts), so
 * rotating the header buys an attacker nothing.
 *
 * NOTE: an attempt reserves its place by one atomic UPSERT that returns the new count, before
 * its password is compared, and only an attempt within the limit may compare. So N concurrent
 * guesses, in one process or many, on SQLite or PostgreSQL, get at most `limit` compares per
 * (username, address). An attempt that is refused gives its reservation back, so refused
 * attempts (429s) are no failures. A success clears the (username, address) count and gives back
 * the username's reservation.
 */
const CLIENT_LIMIT_FACTOR = 10;
/** The most a correct login can be made to wait by other addresses' failures at its username. */
export const MAX_SLOWDOWN_MS = 3_000;
/** The wait added per failure at a username beyond the limit, up to MAX_SLOWDOWN_MS. */
const SLOWDOWN_STEP_MS = 500;
/** How long a spraying address waits for each wrong answer (429): costs the server a timer only. */
export const SPRAY_PAUSE_MS = 1_000;

export type LoginAttempt =
  /** Compare the password (after waiting `delayMs`), then call `succeeded` or `failed`. */
  | { allowed: true; delayMs: number }
  /** Answer 429 with Retry-After `retryAfter` seconds; nothing was compared. */
  | { allowed: false; retryAfter: number };

export class LoginThrottler {
  constructor(
    private readonly orm: Orm,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  private accountKey(username: string): string {
    return `user:${username.toLowerCase().slice(0, 150)}`;
  }

  private clientKey(client: string): string {
    return `ip:${client.slice(0, 200)}`;
  }

  private pairKey(username: string, client: string): string {
    return `pair:${client.slice(0, 200)}|${username.toLowerCase().slice(0, 150)}`;
  }

  /** Adds one attempt to a counter (a fresh window when the last one has passed); the new count and window. */
  private async count(em: EntityManager, key: string, now: Date): Promise<{ attempts: number; windowStart: Date }> {
    const platform = em.getPlatform();
    const at = platform.processDateProperty(now);
    const expired = platform.processDateProperty(new Date(now.getTime() - this.windowMs));
    const rows = (await em.execute(
      `insert into login_throttles ("key", failures, window_start) values (?, 1, ?)
       on conflict ("key") do update set
         failures = case when login_throttles.window_start <= ? then 1 else login_throttles.failures + 1 end,
         window_start = case when login_throttles.window_start <= ? then excluded.window_start else login_throttles.window_start end
       returning failures, window_start`,
      [key, at, expired, expired],
      'all',
    )) as { failures: number | string; window_start: Date | number | string }[];
    return { attempts: Number(rows[0].failures), windowStart: new Date(rows[0].window_start) };
  }

  /** Gives back one reserved attempt. */
  private async giveBack(em: EntityManager, key: string): Promise<void> {
    await em.execute('update login_throttles set failures = failures - 1 where "key" = ? and failures > 0', [key], 'run');
  }

  private retryAfter(windowStart: Date, now: Date): number {
    return Math.max(Math.ceil((windowStart.getTime() + this.windowMs - now.getTime()) / 1000), 1);
  }

  /**
   * Counts an attempt for the (username, address) pair and the username before anything is
   * compared. Refused when the pair is over its limit (nothing counted then); otherwise allowed,
   * after the username's slow-down. The address's own count is never consulted here: other
   * usernames' failures cannot keep a correct password from being compared.
   */
  async attempt(username: string, client: string, now = new Date()): Promise<LoginAttempt> {
    if (this.limit <= 0) return { allowed: true, delayMs: 0 };
    const em = this.orm.em.fork() as EntityManager;
    const pair = await this.count(em, this.pairKey(username, client), now);
    if (pair.attempts > this.limit) {
      await this.giveBack(em, this.pairKey(username, client));
      return { allowed: false, retryAfter: this.retryAfter(pair.windowStart, now) };
    }
    const account = await this.count(em, this.accountKey(username), now);
    // Failures before this attempt beyond the limit slow every attempt at the username, boundedly.
    const excess = account.attempts - 1 - this.limit;
    return { allowed: true, delayMs: excess > 0 ? Math.min(MAX_SLOWDOWN_MS, excess * SLOWDOWN_STEP_MS) : 0 };
  }

  /**
   * A wrong password (the pair and username already counted it as an attempt): counted for the
   * address. Beyond ten times the limit the address is spraying, and the answer is a 429 after
   * `SPRAY_PAUSE_MS` rather than a 401.
   */
  async failed(client: string, now = new Date()): Promise<{ spraying: false } | { spraying: true; retryAfter: number }> {
    if (this.limit <= 0) return { spraying: false };
    const em = this.orm.em.fork() as EntityManager;
    const fromClient = await this.count(em, this.clientKey(client), now);
    if (fromClient.attempts <= this.limit * CLIENT_LIMIT_FACTOR) return { spraying: false };
    return { spraying: true, retryAfter: this.retryAfter(fromClient.windowStart, now) };
  }

  /** A correct password: the pair's count starts again; the username's attempt is given back. */
  async succeeded(username: string, client: string): Promise<void> {
    if (this.limit <= 0) return;
    const em = this.orm.em.fork() as EntityManager;
    await em.execute('delete from login_throttles where "key" = ?', [this.pairKey(username, client)], 'run');
    await this.giveBack(em, this.accountKey(username));
  }

  /** Deletes counters whose window has passed (they would start again at 1); called periodically by the server. */
  async deleteExpired(now = new Date()): Promise<number> {
    const em = this.orm.em.fork() as EntityManager;
    const expired = em.getPlatform().processDateProperty(new Date(now.getTime() - this.windowMs));
    const result = (await em.execute('delete from login_throttles where window_start <= ?', [expired], 'run')) as { affectedRows?: number };
    return result.affectedRows ?? 0;
  }
}

/** Waits out an attempt's slow-down. */
export function slowDown(delayMs: number): Promise<void> {
  return delayMs > 0 ? new Promise((resolve) => setTimeout(resolve, delayMs)) : Promise.resolve();
}
