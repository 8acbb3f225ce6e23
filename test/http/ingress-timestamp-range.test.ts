/**
 * A data timestamp whose instant in UTC is outside years 0000–9999 is refused at ingress with a
 * 400 naming the field (in-memory gateway): it was accepted with 202 and then could not be read
 * back, so every subscriber dead-lettered it as poison. The edges themselves are stored and read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { findEvent, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const withCompletedAt = (id: string, completedAt: string): Record<string, unknown> => {
  const e = structuredPriceEvent() as Record<string, unknown> & { data: Record<string, unknown> };
  return { ...e, id, data: { instrument: 'EUR/USD', timeframe: 'H4', barKey: 'k', barsLoaded: 1, completedAt } };
};

describe('timestamp-millis data at the edges of years 0000–9999 (PriceLoadingCompleted.completedAt)', () => {
  it.each(['9999-12-31T23:59:59-12:00', '0000-01-01T00:30:00+01:00', '9999-12-31T23:59:59.999-00:01'])('%s: 400 naming /data/completedAt, nothing stored', async (completedAt) => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const r = await post(gw.url, withCompletedAt(`utc-out-${completedAt}`, completedAt));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.code).toBe('CEG_INVALID_DATA');
    expect(r.body.violations).toEqual([expect.objectContaining({ field: '/data/completedAt', reason: expect.stringContaining('outside 0000–9999') as string })]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it.each([
    ['9999-12-31T11:59:59.999-12:00', '9999-12-31T23:59:59.999Z'],
    ['0000-01-01T00:30:00-01:00', '0000-01-01T01:30:00.000Z'],
  ])('%s: stored, and read back as %s', async (completedAt, back) => {
    const id = `utc-in-${completedAt}`;
    const r = await post(gw.url, withCompletedAt(id, completedAt));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), PRICE_TOPIC, id);
    expect(found?.env.data).toMatchObject({ kind: 'json', value: { completedAt: back } });
  });
});
