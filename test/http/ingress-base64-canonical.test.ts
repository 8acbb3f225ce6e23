/**
 * base64 whose last character carries non-zero pad bits (`…AQF=`, which decodes as `…AQE=` does)
 * is refused naming the field (RFC 4648 §3.5: two texts for the same bytes): structured mode's
 * `data_base64` (also in a batch; 400 CEG_INVALID_DATA naming `/data_base64`) and a `bytes`/`fixed` data field
 * (400 CEG_INVALID_DATA naming it, e.g. `/data/contentSha256`). The canonical text is accepted.
 * Nothing refused is stored. In-memory gateway.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WRITING_GUIDE_CONTENT_CHANGED as GUIDE } from '../../src/catalog/generated/index.js';
import { base64Problem } from '../../src/envelope/index.js';
import { PRICE_TOPIC, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { BATCH, STRUCTURED, post } from './helpers.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
});
afterAll(async () => {
  await gw?.close();
});

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** The canonical base64 of `bytes` with non-zero pad bits `bits` (1–3 before `=`, 1–15 before `==`) added. */
function tampered(canonical: string, bits: number): string {
  const pads = canonical.endsWith('==') ? 2 : 1;
  const at = canonical.length - pads - 1;
  const value = ALPHABET.indexOf(canonical[at]!) + (pads === 2 ? bits % 15 + 1 : bits % 3 + 1);
  return canonical.slice(0, at) + ALPHABET[value]! + canonical.slice(at + 1);
}

/** Bytes whose base64 is padded (a length not a multiple of 3). */
const paddedBytes = (size?: number): fc.Arbitrary<Uint8Array> => (size === undefined ? fc.uint8Array({ minLength: 1, maxLength: 40 }).filter((b) => b.length % 3 !== 0) : fc.uint8Array({ minLength: size, maxLength: size }));

const guideEvent = (sha: string): Record<string, unknown> => ({
  specversion: '1.0',
  id: `b64-${Math.random().toString(36).slice(2)}`,
  source: 'urn:partner:test',
  type: GUIDE.eventId,
  time: '2026-12-01T10:00:00Z',
  data: { documentId: 'd1', path: 'guides/d1.md', change: 'MODIFIED', previousPath: null, revision: 1, sizeBytes: 10, contentSha256: sha, effectiveDate: null, changedAt: '2026-12-01T10:00:00.000Z' },
});

describe('base64 with non-zero pad bits (RFC 4648 §3.5)', () => {
  it('the tampered text decodes to the same bytes (the premise)', () => {
    fc.assert(
      fc.property(paddedBytes(), fc.nat(), (bytes, bits) => {
        const canonical = Buffer.from(bytes).toString('base64');
        const t = tampered(canonical, bits);
        return t !== canonical && Buffer.from(t, 'base64').equals(Buffer.from(bytes)) && base64Problem(canonical) === undefined && base64Problem(t) !== undefined;
      }),
    );
  });

  it('data_base64 in structured and batch mode: 400 naming /data_base64; nothing stored', async () => {
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    await fc.assert(
      fc.asyncProperty(paddedBytes(), fc.nat(), async (bytes, bits) => {
        const { data: _data, ...attrs } = structuredPriceEvent();
        const ev = { ...attrs, data_base64: tampered(Buffer.from(bytes).toString('base64'), bits) };
        for (const [body, ct] of [[ev, STRUCTURED], [[ev], BATCH]] as const) {
          const r = await post(gw.url, body, ct);
          expect(r.status, JSON.stringify(r.body)).toBe(400);
          expect(r.body.code).toBe('CEG_INVALID_DATA');
          expect(r.body.violations).toEqual([expect.objectContaining({ field: '/data_base64', reason: expect.stringContaining('canonical') as string })]);
        }
      }),
      { numRuns: 30 },
    );
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before);
  });

  it('the canonical data_base64 of JSON data is accepted', async () => {
    const { data: _data, ...attrs } = structuredPriceEvent();
    const text = JSON.stringify(priceLoaded());
    const json = text.length % 3 === 0 ? `${text} ` : text; // padded base64
    const r = await post(gw.url, { ...attrs, datacontenttype: 'application/json', data_base64: Buffer.from(json).toString('base64') }, STRUCTURED);
    expect(r.status, JSON.stringify(r.body)).toBe(202);
  });

  it('a fixed data field (Sha256, 32 bytes): tampered 400 CEG_INVALID_DATA naming /data/contentSha256, canonical 202', async () => {
    const before = await recordCount(gw.gateway, GUIDE.topic);
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(paddedBytes(32), fc.nat(), async (bytes, bits) => {
        const canonical = Buffer.from(bytes).toString('base64');
        const bad = await post(gw.url, guideEvent(tampered(canonical, bits)), STRUCTURED);
        expect(bad.status, JSON.stringify(bad.body)).toBe(400);
        expect(bad.body.code).toBe('CEG_INVALID_DATA');
        expect(bad.body.violations).toEqual([expect.objectContaining({ field: '/data/contentSha256', reason: expect.stringContaining('canonical') as string })]);
        const good = await post(gw.url, guideEvent(canonical), STRUCTURED);
        expect(good.status, JSON.stringify(good.body)).toBe(202);
        accepted++;
      }),
      { numRuns: 20 },
    );
    expect(await recordCount(gw.gateway, GUIDE.topic)).toBe(before + BigInt(accepted));
  });
});
