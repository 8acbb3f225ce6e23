/**
 * One refusal lists at most MAX_LISTED_VIOLATIONS (100) violations, the first by index, and says
 * how many there were in `violationCount` — as the data cap already did inside one event's data
 * (in-memory gateway). A batch of 1000 events × 95 invalid attribute names (726 KB) answered
 * 14 MB listing 95 000 violations. Generated: batches mixing envelope and data problems.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_LISTED_VIOLATIONS } from '../../src/codec/data/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

/** An event with `badNames` invalid attribute names (upper case) and `badFields` unknown data members. */
function bad(i: number, badNames: number, badFields: number): Record<string, unknown> {
  const e = structuredPriceEvent({ id: `cap-${i}` }) as Record<string, unknown> & { data: Record<string, unknown> };
  for (let n = 0; n < badNames; n++) e[`BAD_${n}`] = 'x';
  for (let n = 0; n < badFields; n++) e.data[`unknown${n}`] = 1;
  return e;
}

interface Refusal {
  violations: { index?: number }[];
  violationCount?: number;
}

describe('violations listed in one answer', () => {
  it('the reported batch: 1000 events × 95 invalid names → 100 listed, violationCount 95000, a small answer', async () => {
    // Lean events (no data, short names) so that 1000 of them fit in the 1 MiB body bound.
    const events = Array.from({ length: 1000 }, (_, i) => ({ specversion: '1.0', id: String(i), source: 's', type: 't', ...Object.fromEntries(Array.from({ length: 95 }, (_, n) => [`A${n}`, ''])) }));
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': BATCH }, body: JSON.stringify(events) });
    const text = await res.text();
    expect(res.status).toBe(400);
    const body = JSON.parse(text) as Refusal;
    expect(body.violations).toHaveLength(MAX_LISTED_VIOLATIONS);
    expect(body.violationCount).toBe(95_000);
    expect(body.violations[0]!.index).toBe(0);
    expect(text.length).toBeLessThan(64 * 1024);
  });

  it('one event whose data has 150 unknown members: 100 listed, violationCount 150 (the data cap, now in the answer)', async () => {
    const r = await post(gw.url, bad(0, 0, 150));
    expect(r.status).toBe(400);
    expect((r.body as unknown as Refusal).violations).toHaveLength(MAX_LISTED_VIOLATIONS);
    expect(r.body.violationCount).toBe(150);
  });

  it('generated batches: min(total, 100) listed in index order, violationCount = the total exactly when more', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.nat({ max: 30 }), fc.nat({ max: 130 })), { minLength: 1, maxLength: 8 }), async (shape) => {
        fc.pre(shape.some(([n, f]) => n + f > 0));
        const events = shape.map(([names, fields], i) => bad(i, names, fields));
        const r = await post(gw.url, events, BATCH);
        expect(r.status).toBe(400);
        // Per event: each bad name, and the data's unknown members (the data is checked only when the envelope is fine).
        const total = shape.reduce((n, [names, fields]) => n + (names > 0 ? names : fields), 0);
        const body = r.body as unknown as Refusal;
        expect(body.violations).toHaveLength(Math.min(total, MAX_LISTED_VIOLATIONS));
        expect(body.violationCount).toBe(total > MAX_LISTED_VIOLATIONS ? total : undefined);
        const indexes = body.violations.map((v) => v.index ?? 0);
        expect(indexes).toEqual([...indexes].sort((a, b) => a - b));
      }),
      { numRuns: 25 },
    );
  });
});
