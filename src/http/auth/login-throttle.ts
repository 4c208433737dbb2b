import type { Orm } from '../../db/orm.js';
import { LoginThrottle } from '../../db/entities/infrastructure.js';

/**
 * Failed logins per username and per IP, kept in the database so every process sees them.
 * After `limit` failures for one username (or ten times that from one IP, which may be a
 * shared office address) within the window, further attempts answer 429 until it passes.
 */
const IP_LIMIT_FACTOR = 10;

export class LoginThrottler {
  constructor(
    private readonly orm: Orm,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  private keys(username: string, ip: string): string[] {
    return [`user:${username.toLowerCase().slice(0, 150)}`, `ip:${ip}`];
  }

  /** Seconds until another attempt is allowed, or 0. */
  async retryAfter(username: string, ip: string, now = new Date()): Promise<number> {
    if (this.limit <= 0) return 0;
    const rows = await this.orm.em.fork().find(LoginThrottle, { key: { $in: this.keys(username, ip) } });
    let wait = 0;
    for (const row of rows) {
      const ends = row.windowStart.getTime() + this.windowMs;
      const limit = row.key.startsWith('ip:') ? this.limit * IP_LIMIT_FACTOR : this.limit;
      if (row.failures >= limit && ends > now.getTime()) wait = Math.max(wait, Math.ceil((ends - now.getTime()) / 1000));
    }
    return wait;
  }

  async recordFailure(username: string, ip: string, now = new Date()): Promise<void> {
    const em = this.orm.em.fork();
    await em.transactional(async (tx) => {
      for (const key of this.keys(username, ip)) {
        const row = await tx.findOne(LoginThrottle, { key });
        if (!row) tx.create(LoginThrottle, { key, failures: 1, windowStart: now });
        else if (row.windowStart.getTime() + this.windowMs <= now.getTime()) {
          row.failures = 1;
          row.windowStart = now;
        } else row.failures += 1;
      }
    });
  }

  async recordSuccess(username: string): Promise<void> {
    await this.orm.em.fork().nativeDelete(LoginThrottle, { key: `user:${username.toLowerCase().slice(0, 150)}` });
  }
}
