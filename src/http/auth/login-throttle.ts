import type { EntityManager } from '@mikro-orm/knex';
import type { Orm } from '../../db/orm.js';

/**
 * Login attempts per username and per IP, kept in the database so every process sees them.
 * After `limit` attempts for one username that did not succeed (or ten times that from one IP,
 * which may be a shared office address) within the window, further attempts answer 429 until it
 * passes.
 *
 * NOTE: an attempt is counted before its password is compared, by one atomic UPSERT that
 * returns the new count, and only an attempt whose count is within the limit may compare. So N
 * concurrent guesses, in one process or many, on SQLite or PostgreSQL, get at most `limit`
 * compares and the rest 429: reading the count first and writing it after the compare let all
 * of them through, and lost updates on PostgreSQL. A success takes its attempt back.
 */
const IP_LIMIT_FACTOR = 10;

export class LoginThrottler {
  constructor(
    private readonly orm: Orm,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  private userKey(username: string): string {
    return `user:${username.toLowerCase().slice(0, 150)}`;
  }

  private ipKey(ip: string): string {
    return `ip:${ip.slice(0, 200)}`;
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

  /**
   * Counts an attempt for the username and the IP before anything is compared. Answers the
   * seconds to wait when either is over its limit (the caller answers 429 and compares nothing),
   * or 0 when the caller may compare the password.
   */
  async attempt(username: string, ip: string, now = new Date()): Promise<number> {
    if (this.limit <= 0) return 0;
    const em = this.orm.em.fork() as EntityManager;
    let wait = 0;
    for (const [key, limit] of [
      [this.userKey(username), this.limit],
      [this.ipKey(ip), this.limit * IP_LIMIT_FACTOR],
    ] as const) {
      const { attempts, windowStart } = await this.count(em, key, now);
      if (attempts > limit) wait = Math.max(wait, Math.ceil((windowStart.getTime() + this.windowMs - now.getTime()) / 1000), 1);
    }
    return wait;
  }

  /** A correct password: the username's count starts again, and the IP's attempt is taken back. */
  async succeeded(username: string, ip: string): Promise<void> {
    if (this.limit <= 0) return;
    const em = this.orm.em.fork() as EntityManager;
    await em.execute('delete from login_throttles where "key" = ?', [this.userKey(username)], 'run');
    await em.execute('update login_throttles set failures = failures - 1 where "key" = ? and failures > 0', [this.ipKey(ip)], 'run');
  }
}
