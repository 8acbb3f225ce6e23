/**
 * Replay requests with generated values in every field (fast-check), on the in-memory adapters
 * through the HTTP route: every answer is either the report (200, nothing else) or a refusal as
 * `application/problem+json` (400) naming the field it is about — `body`, `to`, `to.<key>`,
 * `dryRun`, or the unknown member — never a 500, never a refusal without a field.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { silentLogger } from '../../src/observability/index.js';

let gw: Gateway;
let url: string;
const NAME = 'fuzzed';

beforeAll(async () => {
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), silentLogger());
  const addr = await gw.listen();
  await gw.ready;
  await gw.subscriptionsLoaded();
  url = `http://127.0.0.1:${addr.port}`;
  const created = await fetch(`${url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: NAME, kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
  expect(created.status).toBe(201);
});

afterAll(async () => {
  await gw?.close();
});

/** Texts close to what `to` takes: keywords, RFC 3339 times right and wrong, numbers as text. */
const nearTime = fc.oneof(
  fc.constantFrom('earliest', 'latest', 'Earliest', 'LATEST', ' earliest', 'earliest\n', '', 'now', '-1', '0', '1e3'),
  fc.date({ min: new Date(-62_167_219_200_000), max: new Date(253_402_300_799_999), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.tuple(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 14 }), fc.integer({ min: 0, max: 33 }), fc.integer({ min: 0, max: 25 }), fc.integer({ min: 0, max: 61 }), fc.integer({ min: 0, max: 61 }), fc.constantFrom('Z', 'z', '+00:00', '-00:00', '+24:00', '+23:59', '', ' Z', '+1:00'), fc.stringMatching(/^(\.[0-9]{0,12})?$/))
    .map(([y, mo, d, h, mi, s, z, frac]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')}T${String(h).padStart(2, '0')}:${String(mi).padStart(2, '0')}:${String(s).padStart(2, '0')}${frac}${z}`),
  fc.string({ maxLength: 40 }),
);
/** Offsets: numbers of every kind, decimal texts around 2^53 and 2^63, junk. */
const offset = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map((b) => b.toString()),
  fc.constantFrom('9223372036854775807', '9223372036854775808', '9007199254740993', '-0', '00', '1.0', '0x10', ' 1', ''),
  fc.jsonValue({ maxDepth: 1 }),
);
const partitionKey = fc.oneof(fc.constantFrom('0', '1', '2', '5', '6', '00', '-1', '1.0', '', '__proto__', 'constructor', 'x/0'), fc.nat({ max: 1_000_000 }).map(String), fc.string({ maxLength: 20 }));
const to = fc.oneof(nearTime, fc.dictionary(partitionKey, offset, { maxKeys: 5 }), fc.jsonValue({ maxDepth: 2 }));
const body = fc.oneof(
  fc.record({ to, dryRun: fc.oneof(fc.constant(true), fc.jsonValue({ maxDepth: 1 })) }, { requiredKeys: [] }),
  fc.tuple(fc.record({ to, dryRun: fc.constant(true) }), fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 })).map(([a, b]) => ({ ...b, ...a })),
  fc.jsonValue({ maxDepth: 2 }),
);

describe('POST /subscriptions/{name}/replay with generated bodies', () => {
  it('answers the report or a problem+json 400 naming the field', { timeout: 120_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(body, async (b) => {
        const text = JSON.stringify(b);
        const res = await fetch(`${url}/subscriptions/${NAME}/replay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
        const answer = (await res.json()) as Record<string, unknown>;
        if (res.status === 200) {
          expect(answer).toMatchObject({ to: expect.anything() as unknown, dryRun: expect.any(Boolean) as unknown, events: expect.any(Number) as unknown, skipped: expect.any(Number) as unknown });
          return;
        }
        expect(res.status, text).toBe(400);
        expect(res.headers.get('content-type'), text).toMatch(/^application\/problem\+json/);
        expect(['CEG_INVALID_REPLAY', 'CEG_MALFORMED_REQUEST'], text).toContain(answer.code);
        const field = (answer.violations as { field?: unknown }[] | undefined)?.[0]?.field;
        expect(typeof field, text).toBe('string');
        const f = field as string;
        const members = typeof b === 'object' && b !== null && !Array.isArray(b) ? Object.keys(b) : [];
        expect(f === 'body' || f === 'to' || f === 'dryRun' || f.startsWith('to.') || members.some((m) => m.slice(0, 100) === f), `${text} → ${f}`).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});
