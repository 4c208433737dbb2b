/**
 * How many invalid notifications (bad signature, unreadable body) one source may have stored per
 * minute: `WEBHOOK_INVALID_PER_MINUTE` (default 60). Beyond it they are still answered, but
 * leave no log row, so that a flood of forged bodies cannot fill the database. Valid
 * notifications never pass through here.
 *
 * In memory and per process (the bound is on what one process stores; N processes store at most
 * N times as much). The memory is bounded too: at most `maxSources` sources are tracked, each
 * with its own one-minute window; when that many are live at once, every further source shares
 * one overflow window of the same limit, so rotating source addresses neither grows the map nor
 * stores more than (maxSources + 1) × limit rows a minute.
 */
export interface InvalidLogQuota {
  /** Counts one invalid notification from `source`; whether it may still be stored. */
  take(source: string): boolean;
}

interface Window {
  startedAt: number;
  count: number;
}

export const INVALID_QUOTA_WINDOW_MS = 60_000;
/** Sources tracked at once before new ones share the overflow window. */
export const INVALID_QUOTA_MAX_SOURCES = 1_000;

export class InvalidNotificationQuota implements InvalidLogQuota {
  /** Insertion order is window-start order (a window that restarts is re-inserted), so the expired ones are at the front. */
  private readonly windows = new Map<string, Window>();
  private readonly overflow: Window = { startedAt: -Infinity, count: 0 };

  private readonly maxSources: number;
  private readonly now: () => number;
  private readonly onRefused: () => void;

  constructor(
    private readonly perMinute: number,
    options: {
      maxSources?: number;
      /** Monotonic milliseconds; not the service clock, which tests move by days. */
      now?: () => number;
      /** Called for each notification refused storage (the `/metrics` counter). */
      onRefused?: () => void;
    } = {},
  ) {
    this.maxSources = options.maxSources ?? INVALID_QUOTA_MAX_SOURCES;
    this.now = options.now ?? (() => performance.now());
    this.onRefused = options.onRefused ?? (() => {});
  }

  take(source: string): boolean {
    const now = this.now();
    let window = this.windows.get(source);
    if (window && this.expired(window, now)) {
      this.windows.delete(source);
      window = undefined;
    }
    if (!window) {
      this.dropExpired(now);
      if (this.windows.size < this.maxSources) {
        window = { startedAt: now, count: 0 };
        this.windows.set(source, window);
      } else {
        if (this.expired(this.overflow, now)) Object.assign(this.overflow, { startedAt: now, count: 0 });
        window = this.overflow;
      }
    }
    window.count += 1;
    if (window.count <= this.perMinute) return true;
    this.onRefused();
    return false;
  }

  /** Sources tracked now (for tests of the memory bound). */
  get trackedSources(): number {
    return this.windows.size;
  }

  private expired(window: Window, now: number): boolean {
    return now - window.startedAt >= INVALID_QUOTA_WINDOW_MS;
  }

  private dropExpired(now: number): void {
    for (const [source, window] of this.windows) {
      if (!this.expired(window, now)) break;
      this.windows.delete(source);
    }
  }
}
