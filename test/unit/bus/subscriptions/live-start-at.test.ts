/**
 * The one TTL rule for stored start positions (stored.ts liveStartAt): the PATCH that keeps stored
 * entries (service.ts) and the members a reconciler starts (reconciler.ts startPositions) used two
 * rules that differed on an entry without a time (kept by one, dropped by the other).
 */
import { describe, expect, it } from 'vitest';
import { startPositions } from '../../../../src/bus/subscriptions/reconciler.js';
import { START_AT_TTL_MS, liveStartAt } from '../../../../src/bus/subscriptions/stored.js';
import type { StoredStartAt } from '../../../../src/bus/subscriptions/stored.js';

const now = Date.UTC(2026, 11, 4, 8, 0, 0);
const iso = (ms: number): string => new Date(ms).toISOString();

describe('liveStartAt', () => {
  it('keeps stored entries younger than the TTL, in their order; drops those at or past it', () => {
    const entries: StoredStartAt[] = [
      { topic: 'a', partition: 1, offset: '7', takenAt: iso(now - 1_000) },
      { topic: 'a', partition: 0, offset: '5', takenAt: iso(now - START_AT_TTL_MS + 1) },
      { topic: 'b', partition: 0, offset: '1', takenAt: iso(now - START_AT_TTL_MS) },
      { topic: 'b', partition: 1, offset: '2', takenAt: iso(now - 8 * 24 * 3600_000) },
      { topic: 'c', partition: 0, offset: '3', takenAt: iso(now) },
    ];
    expect(liveStartAt(entries, now).map((p) => `${p.topic}/${p.partition}`)).toEqual(['a/1', 'a/0', 'c/0']);
  });

  it('counts an entry without a time, or with one that does not parse, as expired', () => {
    const entries: StoredStartAt[] = [
      { topic: 'a', partition: 0, offset: '5' },
      { topic: 'a', partition: 1, offset: '6', takenAt: 'yesterday' },
      { topic: 'a', partition: 2, offset: '7', takenAt: iso(now - 10) },
    ];
    expect(liveStartAt(entries, now)).toEqual([entries[2]]);
    const untimed = [{ topic: 't', partition: 0, offset: 1n }];
    expect(liveStartAt(untimed, now)).toEqual([]);
  });

  it('reads takenAtMs (members) and takenAt (stored) the same way; nothing in, nothing out', () => {
    const ms = [{ topic: 't', partition: 0, offset: 1n, takenAtMs: now - 60_000 }, { topic: 't', partition: 1, offset: 2n, takenAtMs: now - START_AT_TTL_MS }];
    expect(liveStartAt(ms, now)).toEqual([ms[0]]);
    expect(liveStartAt(undefined, now)).toEqual([]);
    expect(liveStartAt([], now)).toEqual([]);
  });

  it('is the rule the reconciler hands members: an untimed entry is not taken there either', () => {
    const fresh = { topic: 't', partition: 0, offset: 5n, takenAtMs: now - 1_000 };
    const untimed = { topic: 'u', partition: 0, offset: 1n };
    expect(startPositions([fresh, untimed], now)).toEqual({ startAt: [{ topic: 't', partition: 0, offset: 5n }] });
    expect(startPositions([untimed], now)).toEqual({});
  });
});
