/**
 * Hostile JSON bodies at POST /events (in-memory gateway): a duplicate member name deep in a body
 * with many members is refused with a 400 in bounded time, plain or gzip-compressed (it blocked the
 * event loop 28 s, 170 s compressed, when the search cost depth × members), with a pointer cut to
 * MAX_POINTER_CHARS (the answer echoed 160 KB); and data nested deeper than MAX_JSON_DEPTH is a 400
 * naming it, never a 500 or a crash, in every content mode.
 */
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_POINTER_CHARS } from '../../src/envelope/index.js';
import { MAX_JSON_DEPTH } from '../../src/envelope/index.js';
import { PRICE_LOADING_COMPLETED, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, STRUCTURED } from './helpers.js';

/** A behavioural bound, not a speed target (no timing asserts): the quadratic search took 28–104 s on these bodies, the linear one well under 1 s. */
const BOUND_MS = 8_000; // below the unit project's 10 s test timeout, so a regression fails here with its figure

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

async function send(body: Uint8Array | string, headers: Record<string, string>): Promise<{ status: number; text: string; json: { code?: string; violations?: { field?: string; reason: string }[] } }> {
  const res = await fetch(`${gw.url}/events`, { method: 'POST', headers, body });
  const text = await res.text();
  return { status: res.status, text, json: JSON.parse(text) as never };
}

/** A structured event whose data is `{"a":{"a":…{"k0":1,…,"k<keys-1>":1,"k0":2}…}}`, `depth` levels deep. */
function duplicateDeep(depth: number, keys: number): string {
  const members = Array.from({ length: keys }, (_, i) => `"k${i}":1`).join(',');
  const data = `${'{"a":'.repeat(depth)}{${members},"k0":2}${'}'.repeat(depth)}`;
  return JSON.stringify({ ...structuredPriceEvent(), data: '@' }).replace('"@"', data);
}

describe('a duplicate member name in an adversarial body', () => {
  it.each([
    ['plain', false],
    ['gzip-compressed', true],
  ])('%s: 20 000 levels × 20 000 members answers 400 within seconds, the pointer cut and the answer small', async (_what, gzip) => {
    const text = duplicateDeep(20_000, 20_000);
    const body = gzip ? gzipSync(text) : text;
    const started = performance.now();
    const r = await send(body, { 'content-type': STRUCTURED, ...(gzip ? { 'content-encoding': 'gzip' } : {}) });
    expect(performance.now() - started).toBeLessThan(BOUND_MS);
    expect(r.status).toBe(400);
    expect(r.json.code).toBe('CEG_INVALID_EVENT');
    const field = r.json.violations?.[0]?.field ?? '';
    expect(field.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
    expect(field.startsWith('/data/a/a/a/')).toBe(true);
    expect(field.endsWith('/a/k0')).toBe(true);
    expect(r.text.length).toBeLessThan(4_096);
  });
});

describe('data nested deeper than MAX_JSON_DEPTH', () => {
  const deep = (depth: number, open: string, close: string): string => `${open.repeat(depth)}1${close.repeat(depth)}`;
  const shapes: [string, string, string][] = [
    ['objects', '{"x":', '}'],
    ['arrays', '[', ']'],
  ];

  it('257 levels of objects with 3,000-character member names (a 772 KB body): the pointer is cut in field and detail, the answer small, code CEG_INVALID_DATA', async () => {
    const k = 'k'.repeat(3000);
    let data = '1';
    for (let i = 0; i <= MAX_JSON_DEPTH; i++) data = `{"${k}":${data}}`;
    const event = JSON.stringify({ ...structuredPriceEvent(), data: '@' }).replace('"@"', `{"x":${data}}`);
    const structured = await send(event, { 'content-type': STRUCTURED });
    const batch = await send(`[${event}]`, { 'content-type': BATCH });
    const binary = await send(`{"x":${data}}`, { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': 'deep-long', 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z' });
    for (const r of [structured, batch, binary]) {
      expect(r.status, r.text.slice(0, 300)).toBe(400);
      expect(r.json.code).toBe('CEG_INVALID_DATA');
      const field = r.json.violations?.[0]?.field ?? '';
      expect(field.length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
      expect(field.startsWith('/data/x/kkk')).toBe(true);
      expect(field).toContain('…');
      expect(r.text.length).toBeLessThan(4_096);
    }
  });

  for (const depth of [MAX_JSON_DEPTH + 1, 20_000, 150_000]) {
    for (const [what, open, close] of shapes) {
      it(`${depth} levels of ${what}: 400 in structured, batch and binary mode`, async () => {
        const data = deep(depth, open, close);
        const event = JSON.stringify({ ...structuredPriceEvent(), data: '@' }).replace('"@"', data);
        const structured = await send(event, { 'content-type': STRUCTURED });
        const batch = await send(`[${event}]`, { 'content-type': BATCH });
        const binary = await send(data, { 'content-type': 'application/json', 'ce-specversion': '1.0', 'ce-id': `deep-${depth}`, 'ce-source': 'urn:partner:test', 'ce-type': PRICE_LOADING_COMPLETED, 'ce-time': '2022-03-15T12:00:02Z' });
        for (const r of [structured, batch, binary]) {
          expect(r.status, r.text.slice(0, 300)).toBe(400);
          expect(r.text).toContain(`deeper than ${MAX_JSON_DEPTH} levels`);
          expect(r.json.code).toBe('CEG_INVALID_DATA');
          // Array nesting's pointer (/data/0/0/…, 2 characters a level) is cut too.
          expect((r.json.violations?.[0]?.field ?? '').length).toBeLessThanOrEqual(MAX_POINTER_CHARS);
          expect(r.text.length).toBeLessThan(4_096);
        }
      });
    }
  }
});
