/**
 * Property-based fuzzing of `POST /events` on the real stack (issue 12): fast-check generates bad
 * requests across binary, structured and batch mode — each one a valid event broken in one of many
 * ways (envelope, data, JSON text, headers, limits) — and for every one asserts a 4xx answer in
 * application/problem+json naming a cause, and that no record was written: the end offsets of
 * every catalog topic of this run (a catalog copy: nobody else writes there) stay where they were.
 * Nothing stored that was refused.
 */
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawPost, rawRequest } from '../helpers/raw-http.js';
import { uniqueName } from '../helpers/stack.js';

const RUNS = 1000;
const MAX_BATCH = 20;
const catalog = catalogWithOwnTopics(uniqueName('fuzz'));
let gw: TestGateway;
let topics: string[];

beforeAll(async () => {
  gw = await startGateway({ stack: true, env: { CATALOG_DIR: catalog.dir, INGRESS_MAX_BATCH_EVENTS: String(MAX_BATCH) } });
  topics = gw.gateway.catalog.topics.map((t) => t.name);
});
afterAll(async () => {
  await gw?.close();
  catalog.cleanup();
});

async function recordsOnAllTopics(): Promise<bigint> {
  const ends = await Promise.all(topics.map((t) => gw.gateway.transport.endOffsets(t)));
  return ends.flat().reduce((n, p) => n + p.offset, 0n);
}

type Json = Record<string, unknown>;
/** One generated request: raw header lines (repeats allowed) and body bytes. */
interface BadRequest {
  readonly mode: 'structured' | 'binary' | 'batch';
  readonly what: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Buffer;
}

const validEvent = (): Json => structuredPriceEvent({ id: randomUUID() }, priceLoaded('FUZ/USD', 'M5'));

// --- Ways to break one event (JSON object form). Each breaks it for sure. ---
const badTime = fc.oneof(
  fc.constant('2024-05-01T12:00:60Z'),
  fc.constant('0000-01-01T00:00:00Z'),
  fc.constant('2024-05-01t12:00:00Z'),
  fc.constant('2024-05-01T12:00:00'),
  fc.constant('2024-02-30T00:00:00Z'),
  fc.constant('2024-05-01T12:00:00+19:00'),
  fc.integer({ min: 10, max: 30 }).map((n) => `2024-05-01T12:00:00.${'1'.repeat(n)}Z`),
  fc.string({ maxLength: 12 }),
);
const notAString = fc.oneof(fc.integer(), fc.boolean(), fc.constant({}), fc.constant([]), fc.double({ noInteger: true, noNaN: true }));
const controlChar = fc.integer({ min: 0, max: 31 }).map((c) => `a${String.fromCharCode(c)}b`);

const eventBreaks: fc.Arbitrary<{ what: string; apply: (e: Json) => void }> = fc.oneof(
  fc.constantFrom('specversion', 'id', 'source', 'type').map((a) => ({ what: `missing ${a}`, apply: (e: Json) => void delete e[a] })),
  fc.constant({ what: 'missing time', apply: (e: Json) => void delete e.time }),
  fc.tuple(fc.constantFrom('id', 'source', 'type', 'subject'), notAString).map(([a, v]) => ({ what: `${a} not a string`, apply: (e: Json) => void (e[a] = v) })),
  fc.string({ maxLength: 8 }).filter((s) => s !== '1.0').map((v) => ({ what: 'specversion', apply: (e: Json) => void (e.specversion = v) })),
  badTime.map((t) => ({ what: `time ${JSON.stringify(t)}`, apply: (e: Json) => void (e.time = t) })),
  fc.uuid().map((t) => ({ what: 'unknown type', apply: (e: Json) => void (e.type = t) })),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/).filter((n) => /[A-Z_-]/.test(n)).map((n) => ({ what: `attribute name ${n}`, apply: (e: Json) => void (e[n] = 'v') })),
  controlChar.map((v) => ({ what: 'control character in an extension', apply: (e: Json) => void (e.note = v) })),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,40}$/).filter((k) => k !== 'FUZ-USD_M5').map((k) => ({ what: 'partitionkey mismatch', apply: (e: Json) => void (e.partitionkey = k) })),
  fc.integer({ min: 101, max: 3000 }).map((n) => ({ what: `${n} extensions`, apply: (e: Json) => { for (let i = 0; i < n; i++) e[`x${i}`] = 'v'; } })),
  fc.constantFrom('a', 'AA=', 'A A=', '@@@@').map((b) => ({ what: 'bad data_base64', apply: (e: Json) => { delete e.data; e.data_base64 = b; } })),
  fc.constant({ what: 'data and data_base64', apply: (e: Json) => void (e.data_base64 = 'AAAA') }),
  fc.constant({ what: 'no data on a non-compacted topic', apply: (e: Json) => void delete e.data }),
  fc.tuple(fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !['instrument', 'timeframe', 'barKey', 'barsLoaded', 'firstBarAt', 'completedAt'].includes(k) && k !== '__proto__'), fc.jsonValue()).map(([k, v]) => ({ what: 'unknown data field', apply: (e: Json) => void ((e.data as Json)[k] = v) })),
  fc.constantFrom('instrument', 'barsLoaded', 'completedAt').map((f) => ({ what: `missing data field ${f}`, apply: (e: Json) => void delete (e.data as Json)[f] })),
  fc.oneof(fc.string(), fc.boolean(), fc.constant(2 ** 60), fc.double({ noInteger: true, noNaN: true })).map((v) => ({ what: 'barsLoaded wrong', apply: (e: Json) => void ((e.data as Json).barsLoaded = v) })),
  fc.oneof(fc.integer(), fc.constant(null), fc.constant([])).map((v) => ({ what: 'instrument wrong', apply: (e: Json) => void ((e.data as Json).instrument = v) })),
);

/** A broken event as JSON text, or JSON text broken as text. */
const badEventText: fc.Arbitrary<{ what: string; text: string }> = fc.oneof(
  { weight: 6, arbitrary: eventBreaks.map((b) => { const e = validEvent(); b.apply(e); return { what: b.what, text: JSON.stringify(e) }; }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 150 }).map((cut) => { const t = JSON.stringify(validEvent()); return { what: 'truncated JSON', text: t.slice(0, Math.min(cut, t.length - 1)) }; }) },
  { weight: 1, arbitrary: fc.constantFrom('id', 'type', 'time').map((a) => { const e = validEvent(); const t = JSON.stringify(e); return { what: `duplicate member ${a}`, text: t.replace(`"${a}":`, `"${a}":${JSON.stringify(e[a])},"${a}":`) }; }) },
);

const structured: fc.Arbitrary<BadRequest> = fc.oneof(
  { weight: 8, arbitrary: badEventText.map(({ what, text }): BadRequest => ({ mode: 'structured', what, headers: [['content-type', 'application/cloudevents+json']], body: Buffer.from(text) })) },
  { weight: 1, arbitrary: fc.constant({ mode: 'structured' as const, what: 'invalid UTF-8', headers: [['content-type', 'application/cloudevents+json']] as const, body: Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]) }) },
  { weight: 1, arbitrary: fc.constant({ mode: 'structured' as const, what: 'an array in structured mode', headers: [['content-type', 'application/cloudevents+json']] as const, body: Buffer.from(JSON.stringify([validEvent()])) }) },
);

const batch: fc.Arbitrary<BadRequest> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.tuple(fc.array(badEventText, { minLength: 1, maxLength: 3 }), fc.integer({ min: 0, max: 4 })).map(([bad, good]) => ({
      mode: 'batch' as const,
      what: `batch with ${bad.map((b) => b.what).join(', ')}`,
      headers: [['content-type', 'application/cloudevents-batch+json']] as const,
      body: Buffer.from(`[${[...Array.from({ length: good }, () => JSON.stringify(validEvent())), ...bad.map((b) => b.text)].join(',')}]`),
    })),
  },
  { weight: 1, arbitrary: fc.integer({ min: MAX_BATCH + 1, max: MAX_BATCH + 10 }).map((n) => ({ mode: 'batch' as const, what: `${n} events`, headers: [['content-type', 'application/cloudevents-batch+json']] as const, body: Buffer.from(JSON.stringify(Array.from({ length: n }, validEvent))) })) },
  { weight: 1, arbitrary: fc.constant({ mode: 'batch' as const, what: 'not an array', headers: [['content-type', 'application/cloudevents-batch+json']] as const, body: Buffer.from(JSON.stringify(validEvent())) }) },
);

const binaryBase = (): [string, string][] => [
  ['content-type', 'application/json'],
  ['ce-specversion', '1.0'],
  ['ce-id', randomUUID()],
  ['ce-source', 'urn:partner:fuzz'],
  ['ce-type', PRICE_LOADING_COMPLETED],
  ['ce-time', '2022-03-15T12:00:02Z'],
];
const binaryBreaks: fc.Arbitrary<{ what: string; apply: (h: [string, string][]) => [string, string][]; body?: string }> = fc.oneof(
  fc.constantFrom('ce-specversion', 'ce-id', 'ce-source', 'ce-type', 'ce-time').map((n) => ({ what: `missing ${n}`, apply: (h: [string, string][]) => h.filter(([k]) => k !== n) })),
  fc.constantFrom('ce-id', 'ce-type', 'ce-source').map((n) => ({ what: `repeated ${n}`, apply: (h: [string, string][]) => [...h, [n, 'other']] as [string, string][] })),
  badTime.filter((t) => /^[\x21-\x7e]*$/.test(t) && t.length > 0).map((t) => ({ what: `ce-time ${t}`, apply: (h: [string, string][]) => h.map(([k, v]) => [k, k === 'ce-time' ? t : v] as [string, string]) })),
  fc.constantFrom('%zz', '%C0%A0', '%', '"unterminated').map((v) => ({ what: `bad header value ${v}`, apply: (h: [string, string][]) => [...h, ['ce-note', v]] as [string, string][] })),
  fc.constant({ what: 'ce-datacontenttype header', apply: (h: [string, string][]) => [...h, ['ce-datacontenttype', 'application/json']] as [string, string][] }),
  fc.stringMatching(/^[a-z0-9]{0,5}[_.][a-z0-9]{0,5}$/).map((n) => ({ what: `ce-${n}`, apply: (h: [string, string][]) => [...h, [`ce-${n}`, 'v']] as [string, string][] })),
  fc.integer({ min: 101, max: 400 }).map((n) => ({ what: `${n} ce- headers`, apply: (h: [string, string][]) => [...h, ...Array.from({ length: n }, (_, i) => [`ce-x${i}`, 'v'] as [string, string])] })),
  fc.integer({ min: 1, max: 60 }).map((cut) => ({ what: 'body not JSON', apply: (h: [string, string][]) => h, body: JSON.stringify(priceLoaded('FUZ/USD', 'M5')).slice(0, cut) })),
  fc.constant({ what: 'data with an unknown field', apply: (h: [string, string][]) => h, body: JSON.stringify({ ...priceLoaded('FUZ/USD', 'M5'), extra: 1 }) }),
  fc.constant({ what: 'no ce- headers, JSON content type', apply: (h: [string, string][]) => h.filter(([k]) => !k.startsWith('ce-')) }),
);
const binary: fc.Arbitrary<BadRequest> = binaryBreaks.map((b) => ({
  mode: 'binary' as const,
  what: b.what,
  headers: b.apply(binaryBase()),
  body: Buffer.from(b.body ?? JSON.stringify(priceLoaded('FUZ/USD', 'M5'))),
}));

describe('ingress fuzzing (fast-check)', () => {
  it(`${RUNS} generated bad requests across binary, structured and batch mode: each 4xx problem+json, none writes a record to any catalog topic`, async () => {
    const seen = { structured: 0, binary: 0, batch: 0 };
    let before = await recordsOnAllTopics();
    await fc.assert(
      fc.asyncProperty(fc.oneof(structured, binary, batch), async (r) => {
        seen[r.mode]++;
        const [answer] = await rawRequest(gw.url, rawPost(r.headers, r.body), 10_000);
        const problem = answer === undefined ? undefined : (JSON.parse(answer.body) as { code?: string; detail?: string; violations?: unknown[] });
        expect({ what: r.what, status: answer?.status, type: answer?.headers['content-type'] }).toEqual({ what: r.what, status: expect.any(Number) as number, type: 'application/problem+json' });
        expect(answer!.status, r.what).toBeGreaterThanOrEqual(400);
        expect(answer!.status, r.what).toBeLessThan(500);
        expect(problem!.code, r.what).toMatch(/^CEG_/);
        expect(problem!.detail, r.what).toBeTruthy();
        const after = await recordsOnAllTopics();
        expect(after, `${r.what}: a record was written`).toBe(before);
        before = after;
      }),
      { numRuns: RUNS, verbose: 1 },
    );
    expect(seen.structured + seen.binary + seen.batch).toBe(RUNS);
    for (const n of Object.values(seen)) expect(n).toBeGreaterThan(RUNS / 10);
    console.info(`ingress fuzz: ${JSON.stringify(seen)}`);
  }, 60_000);
});
