/**
 * With tracing on, the ingress writes `ce_traceparent` into every record that has none (its
 * producer span). That header counts against the attribute limits a subscriber applies to the
 * record (INGRESS_MAX_ATTRIBUTES, INGRESS_MAX_ATTRIBUTE_BYTES; README "Bounds"), so the ingress
 * must count it too: an event just within the limits without it was answered 202 and then
 * dead-lettered by every subscriber as poison (break report 2026-12-06). Property: whatever the
 * number and size of extension attributes, an event is either refused naming the limit or stored as
 * a record within the limits. On the in-memory adapters with an in-memory span exporter.
 */
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ENVELOPE_LIMITS, checkEnvelopeLimits } from '../../src/envelope/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { readTopic } from './helpers.js';

let gw: TestGateway;
const exporter = new InMemorySpanExporter();
const TOPIC = 'trading.price-loading-completed';

beforeAll(async () => {
  gw = await startGateway({ stack: false, overrides: { spanExporter: exporter } });
});
afterAll(async () => {
  await gw?.close();
});

describe('attribute limits with tracing on', () => {
  it('an event is refused naming the limit, or stored with its ce_traceparent within the limits a subscriber applies', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 80, max: 88 }), fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 64 }) }, { weight: 1, arbitrary: fc.integer({ min: 3000, max: 4096 }) }), fc.boolean(), async (extensions, padding, binary) => {
        const ext: Record<string, string> = {};
        for (let i = 0; i < extensions; i++) ext[`e${i}`] = 'v';
        // The rest of the bytes in up to four values of at most 4,096 bytes (the largest value allowed).
        for (let i = 0; i < 4; i++) ext[`pad${i}`] = 'p'.repeat(padding);
        const event = structuredPriceEvent(ext);
        const res = binary
          ? await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/json', ...Object.fromEntries(Object.entries(event).filter(([k]) => k !== 'data' && k !== 'datacontenttype').map(([k, v]) => [`ce-${k}`, String(v)])) }, body: JSON.stringify(event.data) })
          : await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
        const body = (await res.json()) as { code?: string };
        if (res.status !== 202) {
          expect([400, 413, 431], JSON.stringify(body)).toContain(res.status);
          expect(['CEG_TOO_MANY_ATTRIBUTES', 'CEG_ATTRIBUTES_TOO_LARGE', 'CEG_HEADERS_TOO_LARGE', 'CEG_PAYLOAD_TOO_LARGE']).toContain(body.code);
          return;
        }
        seen.add(String(event.id));
      }),
      { numRuns: 60 },
    );
    // Every stored one carries the gateway's traceparent and passes the subscriber's check.
    const stored = (await readTopic(gw.gateway.transport, TOPIC)).filter((r) => seen.has(new TextDecoder().decode(r.headers.find(([n]) => n === 'ce_id')?.[1] ?? new Uint8Array())));
    expect(stored.length).toBe(seen.size);
    expect(seen.size).toBeGreaterThan(0);
    for (const r of stored) {
      expect(r.headers.some(([n]) => n === 'ce_traceparent')).toBe(true);
      expect(checkEnvelopeLimits(r.headers, DEFAULT_ENVELOPE_LIMITS, r.headers.length)).toBeUndefined();
    }
  }, 60_000);

  it('at the count bound: the attributes the gateway fills plus its traceparent make 100, so one more extension is refused', async () => {
    // Find the largest number of extensions that is stored, then check it was stored within the bound.
    let storedId: string | undefined;
    for (let n = 95; n >= 80 && storedId === undefined; n--) {
      const event = structuredPriceEvent(Object.fromEntries(Array.from({ length: n }, (_, i) => [`x${i}`, 'v'])));
      const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(event) });
      const body = (await res.json()) as { code?: string };
      if (res.status === 202) storedId = String(event.id);
      else expect(body.code).toBe('CEG_TOO_MANY_ATTRIBUTES');
    }
    expect(storedId).toBeDefined();
    const record = (await readTopic(gw.gateway.transport, TOPIC)).find((r) => new TextDecoder().decode(r.headers.find(([n]) => n === 'ce_id')?.[1] ?? new Uint8Array()) === storedId)!;
    expect(record.headers.length).toBe(DEFAULT_ENVELOPE_LIMITS.maxAttributes);
    expect(record.headers.some(([n]) => n === 'ce_traceparent')).toBe(true);
    // Tracing was on: the producer spans were exported.
    expect(exporter.getFinishedSpans().map((s) => s.name)).toContain(`send ${TOPIC}`);
  }, 60_000);
});
