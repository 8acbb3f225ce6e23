/**
 * Ingress refusals found by trying the gateway as a partner would (in-memory adapters): repeated
 * ce- headers, oversized attributes and headers, events without data on non-compacted topics,
 * and batches where several events are bad in different ways — every one listed.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

/** A raw request, so that headers can repeat (fetch would join them). */
function raw(headers: [string, string][], body: string): Promise<{ status: number; type: string | undefined; json: { code?: string; violations?: { attribute?: string; field?: string; index?: number }[] } }> {
  const url = new URL(`${gw.url}/events`);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: '/events', method: 'POST', headers: [['host', url.host], ...headers, ['content-length', String(Buffer.byteLength(body))]].flat() as unknown as Record<string, string> }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], json: text ? (JSON.parse(text) as never) : {} }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const binaryHeaders = (id: string): [string, string][] => [
  ['content-type', 'application/json'],
  ['ce-specversion', '1.0'],
  ['ce-id', id],
  ['ce-source', 'urn:partner:test'],
  ['ce-type', PRICE_LOADING_COMPLETED],
  ['ce-time', '2022-03-15T12:00:02Z'],
];

describe('ingress hardening', () => {
  it('refuses a repeated ce- header instead of joining the values', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const res = await raw([...binaryHeaders('a'), ['ce-id', 'b']], JSON.stringify(priceLoaded()));
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(res.json.violations).toEqual([expect.objectContaining({ attribute: 'id' })]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('refuses data whose partition key would be longer than 249 characters (every subscriber dead-lettered it as poison after a 202)', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const res = await raw(binaryHeaders('long-key'), JSON.stringify(priceLoaded('x'.repeat(247), 'H4')));
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/problem\+json/);
    expect(res.json.code).toBe('CEG_INVALID_DATA');
    expect(res.json.violations).toEqual([expect.objectContaining({ field: '/data/timeframe' })]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('refuses an event without data on a topic that is not compacted (a forgotten body is not a tombstone)', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const res = await raw([...binaryHeaders('no-body'), ['ce-partitionkey', 'ANYTHING_I_WANT']], '');
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('CEG_INVALID_DATA');
    expect(res.json.violations).toEqual([expect.objectContaining({ field: '/data' })]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('refuses attribute names over 128 characters and values over 4096 bytes', async () => {
    const long = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({ [`x${'a'.repeat(200)}`]: 'v' })) });
    expect(long.status).toBe(400);
    const big = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({ note: 'n'.repeat(5000) })) });
    expect(big.status).toBe(400);
    expect(((await big.json()) as { violations: { attribute: string }[] }).violations).toEqual([expect.objectContaining({ attribute: 'note' })]);
    // 25-character names are fine (CloudEvents only recommends ≤ 20).
    const ok = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent({ averyveryverylongattribute: 'v' })) });
    expect(ok.status).toBe(202);
  });

  it('answers headers over 16 KiB with a 431 problem+json, not a bare error', async () => {
    const res = await raw([...binaryHeaders('big'), ['ce-note', 'x'.repeat(20_000)]], JSON.stringify(priceLoaded()));
    expect(res.status).toBe(431);
    expect(res.type).toMatch(/^application\/problem\+json/);
  });

  it('lists every bad event of a batch by index, envelope and data problems alike', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const events = [
      structuredPriceEvent({}, { ...priceLoaded(), barsLoaded: 'many' }),
      structuredPriceEvent({ time: '2022-03-15T12:00:02' }),
      structuredPriceEvent({ type: 'no.such.kind' }),
      structuredPriceEvent(),
    ];
    const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
    expect(res.status).toBe(400);
    const problem = (await res.json()) as { code: string; violations: { index: number; attribute?: string; field?: string }[] };
    expect(problem.code).toBe('CEG_INVALID_EVENT');
    expect(problem.violations.map((v) => [v.index, v.attribute ?? v.field])).toEqual([
      [0, '/data/barsLoaded'],
      [1, 'time'],
      [2, 'type'],
    ]);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });
});
