/**
 * The push sink's micro-batcher and the batch request parts, without I/O: every item lands in
 * exactly one batch, in the order added; no batch breaks `maxEvents` or `maxBytes` (except a lone
 * item larger than `maxBytes`); each item settles with its own batch's result; the wait rules.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MicroBatcher, arrayBytes } from '../../../src/connectors/sinks/webhook/batcher.js';
import { batchBody, batchElement, batchMessageId } from '../../../src/connectors/sinks/webhook/batch-message.js';
import { toStructuredJson } from '../../../src/codec/json/index.js';
import { jsonView } from '../../../src/connectors/index.js';
import type { Envelope } from '../../../src/envelope/types.js';
import type { TransportRecord } from '../../../src/transport/port.js';

/** CloudEvents `source` and `id` hold no NUL (the id's separator). */
const noNul = fc.string().map((s) => s.replaceAll('\0', ''));
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('MicroBatcher', () => {
  it('puts every item in exactly one batch, in order, within maxEvents and maxBytes; each item gets its batch result', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 300 }), fc.boolean()), { minLength: 1, maxLength: 200 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 2, max: 2000 }),
        async (items, maxEvents, maxBytes) => {
          const batches: { i: number; bytes: number }[][] = [];
          const b = new MicroBatcher<{ i: number; bytes: number }, number>({ maxEvents, maxBytes, maxDelayMs: 0 }, (batch) => {
            batches.push([...batch]);
            return Promise.resolve(batches.length - 1);
          });
          // Items arrive in bursts: `true` = the next item comes on a later turn of the event loop.
          const results: Promise<number>[] = [];
          for (const [i, [bytes, later]] of items.entries()) {
            if (later) await tick();
            results.push(b.add({ i, bytes }, bytes));
          }
          const got = await Promise.all(results);
          expect(batches.flat().map((x) => x.i)).toEqual(items.map((_, i) => i));
          for (const batch of batches) {
            expect(batch.length).toBeGreaterThan(0);
            expect(batch.length).toBeLessThanOrEqual(maxEvents);
            const size = arrayBytes(batch.reduce((n, x) => n + x.bytes, 0), batch.length);
            if (batch.length > 1) expect(size).toBeLessThanOrEqual(maxBytes);
          }
          got.forEach((batchIndex, i) => expect(batches[batchIndex]!.some((x) => x.i === i)).toBe(true));
          expect(b.pending).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('with maxDelayMs 0 sends what is at hand on the next turn, in one batch', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, void>({ maxEvents: 100, maxBytes: 1 << 20, maxDelayMs: 0 }, (batch) => {
      batches.push([...batch]);
      return Promise.resolve();
    });
    const all = [1, 2, 3].map((n) => b.add(n, 10));
    expect(batches).toEqual([]);
    await Promise.all(all);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('with maxDelayMs waits for more after the first item, and sends at once when full', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, void>({ maxEvents: 3, maxBytes: 1 << 20, maxDelayMs: 200 }, (batch) => {
      batches.push([...batch]);
      return Promise.resolve();
    });
    const first = b.add(1, 1);
    await tick();
    expect(batches).toEqual([]); // still waiting for more
    const rest = [b.add(2, 1), b.add(3, 1)]; // full: sent now
    expect(batches).toEqual([[1, 2, 3]]);
    await Promise.all([first, ...rest]);
    const late = b.add(4, 1);
    await late; // sent by the timer (within maxDelayMs)
    expect(batches).toEqual([[1, 2, 3], [4]]);
  });

  it('a rejected or throwing send rejects every item of that batch only', async () => {
    let n = 0;
    const b = new MicroBatcher<number, string>({ maxEvents: 2, maxBytes: 1 << 20, maxDelayMs: 0 }, (batch) => {
      n++;
      if (n === 1) return Promise.reject(new Error('down'));
      if (n === 2) throw new Error('thrown');
      return Promise.resolve(`ok ${batch.join(',')}`);
    });
    const r = await Promise.allSettled([b.add(1, 1), b.add(2, 1), b.add(3, 1), b.add(4, 1), b.add(5, 1)]);
    expect(r.map((x) => (x.status === 'fulfilled' ? x.value : (x.reason as Error).message))).toEqual(['down', 'down', 'thrown', 'thrown', 'ok 5']);
  });

  it('an item larger than maxBytes goes alone; the batch before it is sent first', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, void>({ maxEvents: 10, maxBytes: 100, maxDelayMs: 0 }, (batch) => {
      batches.push([...batch]);
      return Promise.resolve();
    });
    await Promise.all([b.add(1, 10), b.add(2, 500), b.add(3, 10)]);
    expect(batches).toEqual([[1], [2], [3]]);
  });
});

describe('batch request parts', () => {
  it('the body is a JSON array of the events in the JSON format, in order, of the counted size (generated events, any text)', () => {
    const event = fc.record({
      subject: fc.string({ unit: 'binary' }),
      data: fc.option(fc.jsonValue(), { nil: undefined }),
      contentType: fc.constantFrom('application/json', 'application/avro', 'text/plain'),
    });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 20 }), (events) => {
        const envelopes = events.map((e, i) => ({
          attributes: { specversion: '1.0', id: `e-${i}`, source: 'urn:t', type: 't', subject: e.subject, datacontenttype: e.contentType },
          ...(e.data === undefined ? {} : { data: { kind: 'json' as const, value: e.data } }),
        })) as Envelope[];
        const elements = envelopes.map((env) => batchElement(env, undefined, { data: 'json' }));
        const body = batchBody(elements);
        expect(JSON.parse(body.toString('utf8'))).toEqual(envelopes.map((env) => JSON.parse(JSON.stringify(toStructuredJson(jsonView(env))))));
        expect(body.length).toBe(arrayBytes(elements.reduce<number>((n, e) => n + e.bytes, 0), elements.length));
      }),
    );
  });

  it('the batch id is stable for the same events in the same order and differs otherwise', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(noNul, noNul), { minLength: 2, maxLength: 10, selector: ([s, i]) => `${s}\0${i}` }), (pairs) => {
        const events = pairs.map(([source, id]) => ({ source, id }));
        const id = batchMessageId(events);
        expect(id).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
        expect(batchMessageId(events.map((e) => ({ ...e })))).toBe(id);
        expect(batchMessageId(events.slice(1))).not.toBe(id);
        expect(batchMessageId([...events].reverse())).not.toBe(id);
      }),
    );
  });

  it('the batch id is SHA-256 over "batch\\0" then each source and id followed by NUL, whatever the text (an id kept across versions)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' })), { maxLength: 10 }), (pairs) => {
        const h = createHash('sha256').update('batch\0');
        for (const [source, id] of pairs) h.update(source).update('\0').update(id).update('\0');
        expect(batchMessageId(pairs.map(([source, id]) => ({ source, id })))).toBe(`msg_${h.digest('base64url').slice(0, 22)}`);
      }),
    );
  });
});

describe('batchElement', () => {
  const attributes = { specversion: '1.0', id: 'e-1', source: 'urn:t', type: 't', subject: 'Euro € 😀 "q" 100%' } as Envelope['attributes'];
  const event: Envelope = { attributes: { ...attributes, datacontenttype: 'application/avro' }, data: { kind: 'json', value: { price: 1.5 } } };
  const avro = Uint8Array.from([0, 0, 0, 0, 7, 2, 4, 6]);
  const record: TransportRecord = { topic: 't', partition: 0, offset: 1n, timestampMs: 0, key: null, value: avro, headers: [['content-type', new TextEncoder().encode('application/avro')]] };

  it('data json: the event in the JSON format with the decoded data, attributes as they are', () => {
    const e = JSON.parse(batchBody([batchElement(event, record, { data: 'json' })]).toString('utf8'))[0] as Record<string, unknown>;
    expect(e).toMatchObject({ id: 'e-1', subject: attributes.subject, datacontenttype: 'application/json', data: { price: 1.5 } });
    expect(e.data_base64).toBeUndefined();
  });

  it('data avro: the record\'s Confluent-framed bytes as data_base64, application/avro', () => {
    const e = JSON.parse(batchBody([batchElement(event, record, { data: 'avro' })]).toString('utf8'))[0] as Record<string, unknown>;
    expect(e).toMatchObject({ id: 'e-1', datacontenttype: 'application/avro', data_base64: Buffer.from(avro).toString('base64') });
    expect(e.data).toBeUndefined();
  });
});
