/**
 * A batch with two events of the same `source` + `id` is refused whole (in-memory gateway):
 * "Producers MUST ensure that source + id is unique for each distinct event" (CloudEvents 1.0.2
 * §id), and consumers drop duplicates by source + id, so the second, different event was stored
 * and then silently dropped downstream. Generated: batches whose identities repeat or not.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

interface Refusal {
  code?: string;
  violations?: { attribute?: string; field?: string; index?: number; reason: string }[];
}

let run = 0;

describe('source + id repeated in one batch', () => {
  it('the reported case: 400 naming attribute id at index 1 (and index 0 in the reason), as any attribute violation of a batch, nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const a = structuredPriceEvent({ id: 'same', source: 'urn:partner:test' });
    const b = structuredPriceEvent({ id: 'same', source: 'urn:partner:test', subject: 'another event' });
    const r = await post(gw.url, [a, b], BATCH);
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    const body = r.body as Refusal;
    expect(body.code).toBe('CEG_INVALID_ATTRIBUTE');
    expect(body.violations).toEqual([{ attribute: 'id', index: 1, reason: expect.stringContaining('index 0') as string, code: 'CEG_INVALID_ATTRIBUTE' }]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('the same id from different sources, or different ids from one source, is accepted', async () => {
    const tag = `ok-${run++}`;
    const r = await post(gw.url, [structuredPriceEvent({ id: tag, source: 'urn:a' }), structuredPriceEvent({ id: tag, source: 'urn:b' }), structuredPriceEvent({ id: `${tag}-2`, source: 'urn:a' })], BATCH);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
  });

  it('generated batches: every later repeat is named by index, the earlier index in the reason; unique batches are accepted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom('urn:a', 'urn:b', 'urn:a/x'), fc.constantFrom('1', '2', '3', '1 ')), { minLength: 1, maxLength: 8 }), async (identities) => {
        const tag = `g${run++}-`;
        const events = identities.map(([source, id]) => structuredPriceEvent({ source, id: tag + id }));
        const first = new Map<string, number>();
        const expected: { index: number; earlier: number }[] = [];
        identities.forEach(([source, id], index) => {
          const key = JSON.stringify([source, id]);
          const earlier = first.get(key);
          if (earlier === undefined) first.set(key, index);
          else expected.push({ index, earlier });
        });
        const r = await post(gw.url, events, BATCH);
        if (expected.length === 0) {
          expect(r.status, JSON.stringify(r.body)).toBe(202);
          return;
        }
        expect(r.status).toBe(400);
        const got = ((r.body as Refusal).violations ?? []).map((v) => ({ index: v.index, attribute: v.attribute, field: v.field, earlier: Number(/index (\d+)/.exec(v.reason)?.[1]) }));
        expect(got).toEqual(expected.map((e) => ({ index: e.index, attribute: 'id', field: undefined, earlier: e.earlier })));
      }),
      { numRuns: 40 },
    );
  });
});
