/** What one tick of the in-server scheduler came to: a pass that finished, threw, or was skipped because another process held the pass lock. */
export type PassOutcome = 'ok' | 'failed' | 'skipped';

export const PASS_OUTCOMES: readonly PassOutcome[] = ['ok', 'failed', 'skipped'];

/** A scheduler that has not finished a tick for this many intervals is stalled. */
export const STALLED_AFTER_INTERVALS = 3;

export interface SchedulerHealth {
  ok: boolean;
  /** Why not ok, or what the scheduler is doing; never a driver message (the probe is public). */
  detail: string | null;
  interval_seconds: number;
  running: boolean;
  stalled: boolean;
  /** When the last pass that ran (ok or failed) started, ISO 8601; null before the first. */
  last_pass_at: string | null;
  last_pass_duration_seconds: number | null;
  /** The last tick's outcome, skips included. */
  last_outcome: PassOutcome | null;
  last_ok_at: string | null;
}

interface Pass {
  startedAt: number;
  durationMs: number;
}

/**
 * The in-server scheduler's state in this process, for GET /readyz and the log (the metrics
 * keep their own). Times are the wall clock's (epoch ms), not the billing clock's: "stalled" is
 * about real time passing while no pass finishes.
 */
export class SchedulerStatus {
  private startedAt: number | null = null;
  private runningSince: number | null = null;
  /** When the last tick finished (any outcome). */
  private lastTickEndedAt: number | null = null;
  private lastOutcome: PassOutcome | null = null;
  private lastPass: Pass | null = null;
  private lastOkAt: number | null = null;

  constructor(
    readonly intervalSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The scheduler's timer started in this process. */
  started(): void {
    this.startedAt = this.now();
  }

  passBegan(): number {
    this.runningSince = this.now();
    return this.runningSince;
  }

  /** A tick begun at `startedAt` ended with `outcome`; returns the pass's duration in ms. */
  tickEnded(outcome: PassOutcome, startedAt: number): number {
    const at = this.now();
    this.runningSince = null;
    this.lastTickEndedAt = at;
    this.lastOutcome = outcome;
    const durationMs = at - startedAt;
    if (outcome !== 'skipped') this.lastPass = { startedAt, durationMs };
    if (outcome === 'ok') this.lastOkAt = startedAt;
    return durationMs;
  }

  /**
   * NOTE: stalled when no tick has finished (a pass, a failure or a skip) for
   * STALLED_AFTER_INTERVALS intervals since the scheduler started: a pass that hangs, or a timer
   * that stopped. A process that skips because another holds the lock is not stalled; the
   * holder's own /readyz shows whether its pass hangs.
   */
  health(): SchedulerHealth {
    const iso = (t: number | null) => (t === null ? null : new Date(t).toISOString());
    const base = {
      interval_seconds: this.intervalSeconds,
      running: this.runningSince !== null,
      last_pass_at: iso(this.lastPass?.startedAt ?? null),
      last_pass_duration_seconds: this.lastPass ? this.lastPass.durationMs / 1000 : null,
      last_outcome: this.lastOutcome,
      last_ok_at: iso(this.lastOkAt),
    };
    if (this.intervalSeconds <= 0) {
      return { ok: true, detail: 'off (BILLING_SCHEDULER_INTERVAL=0): billing passes are run from outside, e.g. billing-admin billing run', stalled: false, ...base };
    }
    if (this.startedAt === null) return { ok: true, detail: 'not started in this process', stalled: false, ...base };
    const since = this.runningSince ?? this.lastTickEndedAt ?? this.startedAt;
    const quietSeconds = Math.floor((this.now() - since) / 1000);
    if (quietSeconds > STALLED_AFTER_INTERVALS * this.intervalSeconds) {
      const what = this.runningSince !== null ? 'a billing pass has been running' : 'no billing pass has finished';
      return { ok: false, detail: `stalled: ${what} for ${quietSeconds} s (interval ${this.intervalSeconds} s)`, stalled: true, ...base };
    }
    if (this.lastOutcome === 'failed') return { ok: false, detail: 'the last billing pass failed; the log says why', stalled: false, ...base };
    return { ok: true, detail: null, stalled: false, ...base };
  }
}
