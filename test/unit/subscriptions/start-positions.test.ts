/**
 * Stored start positions of topics a PATCH added (stored.ts `startAt`) are taken by a member for
 * START_AT_TTL_MS after the PATCH only: later a partition without a commit (offsets expired after
 * a long idle time) follows the rule for any partition without a commit, not the day of the PATCH.
 */
import { expect, it } from 'vitest';
import { startPositions } from '../../../src/bus/subscriptions/reconciler.js';
import { START_AT_TTL_MS } from '../../../src/bus/subscriptions/stored.js';

it('takes positions younger than the TTL, drops older ones and those without a time (stored.ts liveStartAt), and none is no option', () => {
  const now = Date.UTC(2026, 11, 4, 8, 0, 0);
  const fresh = { topic: 't', partition: 0, offset: 5n, takenAtMs: now - 1_000 };
  const edge = { topic: 't', partition: 1, offset: 6n, takenAtMs: now - START_AT_TTL_MS };
  const old = { topic: 't', partition: 2, offset: 7n, takenAtMs: now - 8 * 24 * 3600_000 };
  const untimed = { topic: 'u', partition: 0, offset: 1n };
  expect(startPositions([fresh, edge, old, untimed], now)).toEqual({ startAt: [{ topic: 't', partition: 0, offset: 5n }] });
  expect(startPositions([old, edge], now)).toEqual({});
  expect(startPositions(undefined, now)).toEqual({});
});
