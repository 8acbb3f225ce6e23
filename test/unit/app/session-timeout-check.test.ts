/**
 * The start-up refusal of a KAFKA_SESSION_TIMEOUT_MS against the brokers' tightest bounds
 * (src/app/session-timeout-check.ts): within them nothing; outside one broker's range its bounds;
 * brokers whose ranges do not overlap (a rolling change of group.min/max.session.timeout.ms) said
 * as such, not as a range whose minimum is above its maximum.
 */
import { describe, expect, it } from 'vitest';
import { sessionTimeoutRefusal } from '../../../src/app/session-timeout-check.js';
import { tightestBounds } from '../../../src/transport/session-bounds.js';

describe('sessionTimeoutRefusal', () => {
  it('accepts a value within the bounds, the bounds themselves included', () => {
    for (const v of [6_000, 30_000, 1_800_000]) expect(sessionTimeoutRefusal(v, { minMs: 6_000, maxMs: 1_800_000 })).toBeUndefined();
  });

  it('names the setting and the range for a value outside it', () => {
    const text = sessionTimeoutRefusal(5_999, { minMs: 6_000, maxMs: 1_800_000 });
    expect(text).toContain('KAFKA_SESSION_TIMEOUT_MS=5999 is outside what the broker accepts');
    expect(text).toContain('6000–1800000 ms');
  });

  it('says the brokers disagree when their ranges do not overlap, whatever the value', () => {
    const bounds = tightestBounds([{ minMs: 6_000, maxMs: 30_000 }, { minMs: 45_000, maxMs: 1_800_000 }])!;
    for (const v of [10_000, 40_000, 50_000]) {
      const text = sessionTimeoutRefusal(v, bounds);
      expect(text).toContain('ranges do not overlap');
      expect(text).toContain('the highest minimum, 45000 ms, is above the lowest maximum, 30000 ms');
      expect(text).not.toContain('45000–30000');
    }
  });
});
