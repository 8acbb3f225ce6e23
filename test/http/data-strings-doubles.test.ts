/**
 * POST /events on the in-memory gateway: a lone-surrogate escape in a data string is refused with
 * 400 problem+json naming the field (never written as CESU-8 bytes, never turned into a record
 * key), and a double holding an integral number beyond 2^53 is accepted and read back exactly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STRATEGY_SIGNAL as SIGNAL } from '../../src/catalog/generated/index.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { strategySignal } from '../fixtures/events.js';
import { STRUCTURED, findEvent, post } from './helpers.js';

const PROBLEM = 'application/problem+json';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw.close();
});

const count = () => recordCount(gw.gateway, SIGNAL.topic);
let n = 0;
const attrs = () => ({ specversion: '1.0', id: `sd-${++n}-${Date.now()}`, source: 'urn:partner:test', type: SIGNAL.eventId, time: '2022-03-15T12:00:05Z' });

describe('POST /events: strings in data must be well-formed Unicode', () => {
  // JSON.stringify writes a lone surrogate as the escape `\ud800`: the body is valid UTF-8 JSON.
  const bad = () => ({ ...strategySignal(), instrument: 'EUR\ud800' });

  it('structured mode: 400 problem+json naming /data/instrument, nothing produced', async () => {
    const before = await count();
    const body = JSON.stringify({ ...attrs(), datacontenttype: 'application/json', data: bad() });
    expect(body).toContain('"instrument":"EUR\\ud800"');
    const a = await post(gw.url, body, STRUCTURED);
    expect(a.status).toBe(400);
    expect(a.headers.get('content-type')).toContain(PROBLEM);
    expect(a.body.code).toBe('CEG_INVALID_DATA');
    expect(a.body.violations).toEqual([{ field: '/data/instrument', reason: expect.stringMatching(/lone surrogate U\+D800/), code: 'CEG_INVALID_DATA' }]);
    expect(await count()).toBe(before);
  });

  it('binary mode: the same refusal', async () => {
    const before = await count();
    const { specversion, id, source, type, time } = attrs();
    const a = await post(gw.url, JSON.stringify(bad()), 'application/json', { 'ce-specversion': specversion, 'ce-id': id, 'ce-source': source, 'ce-type': type, 'ce-time': time });
    expect(a.status).toBe(400);
    expect(a.headers.get('content-type')).toContain(PROBLEM);
    expect((a.body.violations as { field?: string }[]).map((v) => v.field)).toEqual(['/data/instrument']);
    expect(await count()).toBe(before);
  });
});

describe('POST /events: doubles take any finite JSON number', () => {
  it.each(['1e16', '-1e20', '1e300', '1.7976931348623157e308', '10000000000000000.0'])('confidence %s: 202, read back exactly', async (literal) => {
    const ev = { ...attrs(), datacontenttype: 'application/json', data: strategySignal() };
    const body = JSON.stringify(ev).replace('"side":', `"confidence":${literal},"side":`);
    const a = await post(gw.url, body, STRUCTURED);
    expect(a.status).toBe(202);
    const found = await findEvent(gw.gateway.transport, gw.gateway.codec(), SIGNAL.topic, ev.id);
    expect(found?.env.data).toEqual({ kind: 'json', value: expect.objectContaining({ confidence: Number(literal) }) });
  });
});
