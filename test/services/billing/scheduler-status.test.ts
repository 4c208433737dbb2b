import { describe, expect, it } from 'vitest';
import { SchedulerStatus } from '../../../src/services/billing/scheduler-status.js';

describe('the scheduler status /readyz shows', () => {
  const at = { now: 1_000_000 };
  const status = () => new SchedulerStatus(60, () => at.now);

  it('is stalled when no pass has finished within three intervals of the start', () => {
    at.now = 1_000_000;
    const s = status();
    s.started();
    at.now += 180_000;
    expect(s.health()).toMatchObject({ ok: true, stalled: false });
    at.now += 1_000;
    expect(s.health()).toMatchObject({ ok: false, stalled: true, detail: 'stalled: no billing pass has finished for 181 s (interval 60 s)' });
  });

  it('is stalled when a pass has been running for three intervals, and recovers when it ends', () => {
    at.now = 1_000_000;
    const s = status();
    s.started();
    at.now += 60_000;
    const began = s.passBegan();
    at.now += 200_000;
    expect(s.health()).toMatchObject({ ok: false, stalled: true, running: true });
    expect(s.health().detail).toContain('a billing pass has been running for 200 s');
    s.tickEnded('ok', began);
    expect(s.health()).toMatchObject({ ok: true, stalled: false, running: false, last_outcome: 'ok', last_pass_duration_seconds: 200 });
  });

  it('a skip is a finished tick but not a pass: the last pass stays the last one that ran', () => {
    at.now = 1_000_000;
    const s = status();
    s.started();
    s.tickEnded('ok', s.passBegan());
    at.now += 60_000;
    s.tickEnded('skipped', s.passBegan());
    expect(s.health()).toMatchObject({ ok: true, last_outcome: 'skipped', last_pass_at: new Date(1_000_000).toISOString(), last_ok_at: new Date(1_000_000).toISOString() });
  });
});
