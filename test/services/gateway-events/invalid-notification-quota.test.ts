import { describe, expect, it } from 'vitest';
import { INVALID_QUOTA_WINDOW_MS, InvalidNotificationQuota } from '../../../src/services/gateway-events/invalid-notification-quota.js';

/** A quota on a hand-moved clock, counting its refusals. */
function quota(perMinute: number, maxSources?: number) {
  let now = 0;
  let refused = 0;
  const q = new InvalidNotificationQuota(perMinute, { maxSources, now: () => now, onRefused: () => refused++ });
  return {
    q,
    advance: (ms: number) => (now += ms),
    refused: () => refused,
    takeMany: (source: string, n: number) => Array.from({ length: n }, () => q.take(source)).filter(Boolean).length,
  };
}

describe('InvalidNotificationQuota', () => {
  it('allows `perMinute` per source within a minute, refuses and counts the rest', () => {
    const t = quota(3);
    expect(t.takeMany('a', 5)).toBe(3);
    expect(t.refused()).toBe(2);
    expect(t.takeMany('b', 2)).toBe(2);
  });

  it('a source gets a fresh minute once its window has passed', () => {
    const t = quota(2);
    expect(t.takeMany('a', 3)).toBe(2);
    t.advance(INVALID_QUOTA_WINDOW_MS - 1);
    expect(t.q.take('a')).toBe(false);
    t.advance(1);
    expect(t.takeMany('a', 3)).toBe(2);
  });

  it('0 stores none', () => {
    expect(quota(0).takeMany('a', 3)).toBe(0);
  });

  it('rotating sources never track more than maxSources; beyond, new sources share one overflow window of the same limit', () => {
    const t = quota(2, 100);
    let allowed = 0;
    for (let i = 0; i < 10_000; i++) allowed += Number(t.q.take(`10.0.${i >> 8}.${i & 255}`));
    expect(t.q.trackedSources).toBe(100);
    // 100 tracked sources once each, then the overflow window's 2.
    expect(allowed).toBe(102);

    // A minute later the expired windows make room again, whatever the map held.
    t.advance(INVALID_QUOTA_WINDOW_MS);
    expect(t.q.take('fresh')).toBe(true);
    expect(t.q.trackedSources).toBe(1);
  });
});
