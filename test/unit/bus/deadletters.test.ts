/**
 * Dead letters as a product (issue 10) on the in-memory transport (same semantics as Kafka, the
 * same contract suite): the `after` token, paging (property-based: any page size, any purged
 * subset, gives every listed dead letter once, in order), the request shapes of the routes,
 * forged redrive headers, and the idempotency store letting a redriven dead letter through.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { DeadLetters, decodeCursor, encodeCursor } from '../../../src/bus/deadletters/index.js';
import { createMemoryIdempotencyStore } from '../../../src/bus/idempotency/index.js';
import { REDRIVE_HEADERS, deadLetter, deadLetterTopic, parseRedriveMeta, redriveHeaders, redriveTopic } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { isGatewayError } from '../../../src/core/errors.js';
import { parseListQuery, parseSelection } from '../../../src/http/api/subscriptions/operations.js';
import type { RecordHeader, TransportRecord } from '../../../src/transport/port.js';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { readRecords, subscriberFixtures } from './helpers.js';

const policy = retryPolicy({ maxAttempts: 1, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 });
const fixtures = subscriberFixtures({ subscription: 'sub-dl', retry: policy, startFrom: 'earliest' });
afterEach(fixtures.cleanup);

const caught = (f: () => unknown): unknown => {
  try {
    f();
  } catch (err) {
    return err;
  }
  return undefined;
};

/** A memory gateway's worth of parts with `n` dead letters on `sub-dl.dlq`, and their ids in order. */
async function withDeadLetters(n: number) {
  const fx = await fixtures.setup();
  const s = await fx.sub({ handler: () => Promise.resolve(deadLetter('refused')) });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = fx.publisher.publish('PriceLoadingCompleted', priceLoaded(`P${i}/USD`, 'H1'))!;
    ids.push(r.id);
    await r.delivered;
  }
  await waitFor(`${n} dead letters`, async () => (await fx.transport.endOffsets(deadLetterTopic('sub-dl')))[0]!.offset === BigInt(n), 5000, 5);
  // The order on the dead-letter topic: the subscription handles partitions independently.
  const order = (await readRecords(fx.transport, deadLetterTopic('sub-dl'), n)).map((r) => new TextDecoder().decode(r.headers.find(([h]) => h === 'ce_id')![1]));
  await s.unsubscribe();
  return { ...fx, ids: order, dl: new DeadLetters({ transport: fx.transport, codec: fx.codec }) };
}

async function pages(dl: DeadLetters, limit: number): Promise<{ ids: string[]; pages: number }> {
  const out: string[] = [];
  let after: string | undefined;
  for (let n = 1; ; n++) {
    const p = await dl.list('sub-dl', { limit, ...(after === undefined ? {} : { after }) });
    expect(p.items.length).toBeLessThanOrEqual(limit);
    out.push(...p.items.map((i) => i.id!));
    if (p.next === null) return { ids: out, pages: n };
    after = p.next;
  }
}

describe('the after token', () => {
  it('round-trips any positions, and refuses anything else naming `after`', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.nat(1000), fc.bigInt({ min: 0n, max: 2n ** 63n - 1n })), { selector: ([p]) => p, maxLength: 8, minLength: 1 }), (entries) => {
        const m = new Map(entries);
        expect(decodeCursor(encodeCursor(m, 'g.dlq'), 'g.dlq')).toEqual(m);
        // Another listing's token (another subscription's dead-letter topic) is refused.
        const err = caught(() => decodeCursor(encodeCursor(m, 'other.dlq'), 'g.dlq'));
        expect(isGatewayError(err, 'CEG_INVALID_PARAMETER') && err.details.field === 'after').toBe(true);
      }),
    );
    // Tokens with the right tag whose positions encodeCursor cannot have written, and untagged ones.
    const tag = Buffer.from(encodeCursor(new Map([[0, 0n]]), 'g.dlq'), 'base64url').toString('utf8').split(':')[0]!;
    const tagged = (text: string): string => Buffer.from(`${tag}:${text}`).toString('base64url');
    for (const bad of ['', 'not a token', 'x'.repeat(3000), tagged('0.1~0.2'), tagged('0.-1'), Buffer.from('0.1').toString('base64url'), `${encodeCursor(new Map([[0, 5n]]), 'g.dlq')}=`]) {
      const err = caught(() => decodeCursor(bad, 'g.dlq'));
      expect(isGatewayError(err, 'CEG_INVALID_PARAMETER') && err.details.field === 'after', bad).toBe(true);
    }
  });
});

describe('paging', () => {
  it('any page size gives every dead letter once, oldest first; any purged subset is left out', async () => {
    const { dl, ids } = await withDeadLetters(12);
    expect(await pages(dl, 1000)).toEqual({ ids, pages: 1 });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 14 }), async (limit) => {
        const got = await pages(dl, limit);
        expect(got.ids).toEqual(ids);
        expect(got.pages).toBe(Math.max(1, Math.ceil(ids.length / limit)));
      }),
      { numRuns: 15 },
    );
    await fc.assert(
      fc.asyncProperty(fc.subarray([0, 1, 2, 3, 4, 5]), fc.integer({ min: 1, max: 5 }), async (purge, limit) => {
        const { dl: fresh, ids: all } = await withDeadLetters(6);
        const chosen = purge.map((i) => all[i]!);
        if (chosen.length > 0) expect((await fresh.purge('sub-dl', { ids: chosen })).purged).toBe(new Set(chosen).size);
        expect((await pages(fresh, limit)).ids).toEqual(all.filter((id) => !chosen.includes(id)));
      }),
      { numRuns: 8 },
    );
  });

  it('limit outside 1–1000 is refused naming `limit`; purge all empties the listing and later dead letters are listed', async () => {
    const { dl, publisher, sub, transport } = await withDeadLetters(3);
    for (const limit of [0, 1001, 1.5]) {
      const err = await dl.list('sub-dl', { limit }).catch((e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_PARAMETER') && err.details.field === 'limit').toBe(true);
    }
    expect(await dl.purge('sub-dl', { all: true })).toEqual({ purged: 3, items: [], notFound: [] });
    expect(await dl.list('sub-dl')).toEqual({ items: [], next: null });
    await sub({ handler: () => Promise.resolve(deadLetter('again')) });
    const later = publisher.publish('PriceLoadingCompleted', priceLoaded('LATE/USD', 'H1'))!;
    await waitFor('a later dead letter', async () => (await transport.endOffsets(deadLetterTopic('sub-dl')))[0]!.offset === 4n, 5000, 5);
    expect((await dl.list('sub-dl')).items.map((i) => i.id)).toEqual([later.id]);
    expect(await dl.purge('sub-dl', { all: true })).toEqual({ purged: 1, items: [], notFound: [] });
  });
});

describe('redrive', () => {
  it('concurrent redrives and purges of one subscription run one after the other: each dead letter is redriven once (three at once each sent all of them)', async () => {
    const { transport, dl, ids } = await withDeadLetters(6);
    const [first, second, third, purged] = await Promise.all([dl.redrive('sub-dl', { all: true }), dl.redrive('sub-dl', { all: true }), dl.redrive('sub-dl', { ids: [ids[0]!] }), dl.purge('sub-dl', { ids: [ids[1]!] })]);
    expect([first.redriven, second.redriven, third.redriven, purged.purged]).toEqual([6, 0, 0, 1]);
    expect(second.skipped.map((x) => x.reason)).toEqual(Array(6).fill('redriven already'));
    expect((await transport.endOffsets(redriveTopic('sub-dl')))[0]!.offset).toBe(6n);
    const sent = (await readRecords(transport, redriveTopic('sub-dl'), 6)).map((r) => new TextDecoder().decode(r.headers.find(([h]) => h === 'ce_id')![1]));
    expect(sent.sort()).toEqual([...ids].sort());
  });

  it('an idempotent subscription runs a redriven dead letter again (its dead-lettered outcome does not count as done)', async () => {
    const fx = await fixtures.setup();
    const store = createMemoryIdempotencyStore();
    let accept = false;
    const handled: string[] = [];
    await fx.sub({ idempotency: { store, windowMs: 60_000 }, handler: (e) => Promise.resolve(accept ? void handled.push(e.attributes.id) : deadLetter('not yet')) });
    const r = fx.publisher.publish('PriceLoadingCompleted', priceLoaded('IDEM/USD', 'H1'))!;
    await waitFor('the dead letter', async () => (await fx.transport.endOffsets(deadLetterTopic('sub-dl')))[0]!.offset === 1n, 5000, 5);
    accept = true;
    const dl = new DeadLetters({ transport: fx.transport, codec: fx.codec });
    expect((await dl.redrive('sub-dl', { ids: [r.id] })).redriven).toBe(1);
    await waitFor('the redriven event handled', () => handled.includes(r.id), 5000, 5);
    const [again] = await readRecords(fx.transport, redriveTopic('sub-dl'), 1);
    const meta = parseRedriveMeta(again!.headers);
    expect(meta).toMatchObject({ subscription: 'sub-dl', count: 1, origin: { topic: PRICE_TOPIC } });
    expect(again!.headers.filter(([n]) => n.startsWith('dlq_'))).toEqual([]);
    await store.close();
  });

  it('forged redrive headers (another subscription, a foreign topic, a repeated header, none) are dead-lettered, never delivered', async () => {
    const fx = await fixtures.setup();
    const handled: string[] = [];
    const s = await fx.sub({ handler: (e) => Promise.resolve(void handled.push(e.attributes.id)) });
    const template = fx.publisher.publish('PriceLoadingCompleted', priceLoaded('FORGE/USD', 'H1'))!;
    await waitFor('the template handled', () => handled.length === 1, 5000, 5);
    const [original] = await readRecords(fx.transport, PRICE_TOPIC, 1);
    const good = (over: Partial<{ subscription: string; topic: string }>): RecordHeader[] =>
      redriveHeaders({ subscription: over.subscription ?? 'sub-dl', count: 1, origin: { topic: over.topic ?? PRICE_TOPIC, partition: 0, offset: 0n }, atMs: Date.now(), deadLetter: { partition: 0, offset: 0n } });
    const forged: RecordHeader[][] = [
      good({ subscription: 'someone-else' }),
      good({ topic: 'foreign.topic' }),
      [...good({}), [REDRIVE_HEADERS.count, new TextEncoder().encode('2')]],
      [],
    ];
    await fx.transport.produce(redriveTopic('sub-dl'), forged.map((extra) => ({ key: original!.key, value: original!.value, headers: [...original!.headers, ...extra] })));
    await waitFor('4 forged records dead-lettered', () => s.stats().deadLettered === 4, 5000, 5);
    expect(handled).toEqual([template.id]);
    const dead = await readRecords(fx.transport, deadLetterTopic('sub-dl'), 4);
    const reason = (r: TransportRecord): string => new TextDecoder().decode(r.headers.find(([n]) => n === 'dlq_reason')![1]);
    expect(dead.map(reason).every((x) => x.startsWith('poison: redrive-topic record with invalid redrive headers'))).toBe(true);
  });
});

describe('redrive order (docs/subscriptions.md "Redrive": redrives come in the order asked)', () => {
  const idOf = (r: TransportRecord): string => new TextDecoder().decode(r.headers.find(([h]) => h === 'ce_id')![1]);

  it('an `events`, `ids` or `deadLetters` list is written to the redrive topic, and listed in items and skipped, in the order asked; `all` in dead-letter order', async () => {
    await fc.assert(
      fc.asyncProperty(fc.shuffledSubarray([0, 1, 2, 3, 4, 5], { minLength: 2 }), fc.constantFrom('events', 'ids', 'deadLetters'), fc.boolean(), async (picked, kind, duplicate) => {
        const { transport, dl } = await withDeadLetters(6);
        const listed = (await dl.list('sub-dl')).items;
        const asked = picked.map((i) => listed[i]!);
        // A duplicate of the first entry at the end counts at its first place.
        const list = duplicate ? [...asked, asked[0]!] : asked;
        const sel =
          kind === 'events'
            ? { events: list.map((i) => ({ source: i.source!, id: i.id! })) }
            : kind === 'ids'
              ? { ids: list.map((i) => i.id!) }
              : { deadLetters: list.map((i) => ({ partition: i.deadLetter.partition, offset: i.deadLetter.offset })) };
        const want = asked.map((i) => i.id);
        const r = await dl.redrive('sub-dl', sel);
        expect(r.items.map((i) => i.id)).toEqual(want);
        expect((await readRecords(transport, redriveTopic('sub-dl'), want.length)).map(idOf)).toEqual(want);
        const again = await dl.redrive('sub-dl', sel);
        expect([again.redriven, again.skipped.map((i) => i.id)]).toEqual([0, want]);
        // `all`: the rest, and the skips, in dead-letter order (offsets ascending).
        const all = await dl.redrive('sub-dl', { all: true });
        expect(all.items.map((i) => i.id)).toEqual(listed.filter((_, i) => !picked.includes(i)).map((i) => i.id));
        expect(all.skipped.map((i) => i.id)).toEqual(listed.filter((_, i) => picked.includes(i)).map((i) => i.id));
        const written = (await readRecords(transport, redriveTopic('sub-dl'), 6)).map(idOf);
        expect(written.slice(want.length)).toEqual(all.items.map((i) => i.id));
      }),
      { numRuns: 12 },
    );
  });
});

describe('selection by event (E5: an id is unique per source only)', () => {
  it('structured-mode dead letters (no ce_ headers) are matched by the decoded source and id: `events` picks one, `ids` both', async () => {
    const fx = await fixtures.setup();
    const s = await fx.sub({ handler: () => Promise.resolve(deadLetter('refused')) });
    const enc = new TextEncoder();
    const structured = (source: string) => ({
      key: null,
      value: enc.encode(JSON.stringify({ specversion: '1.0', id: 'dup', source, type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: priceLoaded('DUP/USD', 'H1') })),
      headers: [['content-type', enc.encode('application/cloudevents+json')]] as RecordHeader[],
    });
    await fx.transport.produce(PRICE_TOPIC, [structured('urn:a'), structured('urn:b'), structured('urn:a')]);
    await waitFor('3 dead letters', async () => (await fx.transport.endOffsets(deadLetterTopic('sub-dl')))[0]!.offset === 3n, 5000, 5);
    await s.unsubscribe();
    const dl = new DeadLetters({ transport: fx.transport, codec: fx.codec });
    const listed = await dl.list('sub-dl');
    expect(listed.items.map((i) => [i.id, i.source, i.event === null])).toEqual([['dup', 'urn:a', false], ['dup', 'urn:b', false], ['dup', 'urn:a', false]]);
    const r = await dl.redrive('sub-dl', { events: [{ source: 'urn:b', id: 'dup' }] });
    expect([r.redriven, r.items.map((i) => [i.source, i.deadLetter.offset]), r.notFound]).toEqual([1, [['urn:b', '1']], []]);
    const p = await dl.purge('sub-dl', { events: [{ source: 'urn:a', id: 'dup' }, { source: 'urn:c', id: 'dup' }] });
    expect([p.purged, p.items.map((i) => [i.source, i.deadLetter.offset]), p.notFound]).toEqual([2, [['urn:a', '0'], ['urn:a', '2']], [{ source: 'urn:c', id: 'dup' }]]);
    expect((await dl.list('sub-dl')).items.map((i) => i.source)).toEqual(['urn:b']);
    const byId = await dl.purge('sub-dl', { ids: ['dup'] });
    expect([byId.purged, byId.items.map((i) => i.source)]).toEqual([1, ['urn:b']]);
  });
});

describe('selection by dead-letter coordinates (E5: a dead letter that is not a readable event has no id or source)', () => {
  it('`deadLetters` picks exactly the records named, an unreadable structured one too, as `all` would act on it; notFound as asked', async () => {
    const fx = await fixtures.setup();
    const s = await fx.sub({ handler: () => Promise.resolve(deadLetter('refused')) });
    const enc = new TextEncoder();
    const structured = (value: string) => ({ key: null, value: enc.encode(value), headers: [['content-type', enc.encode('application/cloudevents+json')]] as RecordHeader[] });
    const good = JSON.stringify({ specversion: '1.0', id: 'ok', source: 'urn:a', type: PRICE_LOADING_COMPLETED, datacontenttype: 'application/json', data: priceLoaded('OK/USD', 'H1') });
    await fx.transport.produce(PRICE_TOPIC, [structured('not json'), structured(good), structured('{"also": "not an event"}')]);
    await waitFor('3 dead letters', async () => (await fx.transport.endOffsets(deadLetterTopic('sub-dl')))[0]!.offset === 3n, 5000, 5);
    await s.unsubscribe();
    const dl = new DeadLetters({ transport: fx.transport, codec: fx.codec });
    expect((await dl.list('sub-dl')).items.map((i) => [i.id, i.deadLetter.offset])).toEqual([[null, '0'], ['ok', '1'], [null, '2']]);
    // By event, the unreadable ones are out of reach.
    expect((await dl.purge('sub-dl', { ids: ['ok'] })).items.map((i) => i.deadLetter.offset)).toEqual(['1']);
    const r = await dl.redrive('sub-dl', { deadLetters: [{ partition: 0, offset: '2' }, { partition: 0, offset: '1' }, { partition: 0, offset: '42' }, { partition: 0, offset: '2' }] });
    // Offset 1 is purged already: not found. Offset 2 has its value and source headers: redriven (as `all` does).
    expect([r.redriven, r.items, r.skipped, r.notFound]).toEqual([1, [{ id: null, source: null, deadLetter: { topic: 'sub-dl.dlq', partition: 0, offset: '2' } }], [], [{ partition: 0, offset: '1' }, { partition: 0, offset: '42' }]]);
    const redriven = await readRecords(fx.transport, redriveTopic('sub-dl'), 1);
    expect(new TextDecoder().decode(redriven[0]!.value)).toBe('{"also": "not an event"}');
    // `all` acts on offset 0 alike (redriven) and skips 2 (redriven already).
    const all = await dl.redrive('sub-dl', { all: true });
    expect([all.redriven, all.items.map((i) => [i.id, i.deadLetter.offset]), all.skipped.map((i) => [i.deadLetter.offset, i.reason])]).toEqual([1, [[null, '0']], [['2', 'redriven already']]]);
    const p = await dl.purge('sub-dl', { deadLetters: [{ partition: 0, offset: '0' }, { topic: 'sub-dl.dlq', partition: 0, offset: '2' }] });
    expect([p.purged, p.items.map((i) => [i.id, i.deadLetter.offset]), p.notFound]).toEqual([2, [[null, '0'], [null, '2']], []]);
    expect((await dl.list('sub-dl')).items).toEqual([]);
  });

  it('refuses, before acting, an entry naming another topic or malformed (a library caller skips the route\'s checks)', async () => {
    const fx = await fixtures.setup();
    const dl = new DeadLetters({ transport: fx.transport, codec: fx.codec });
    const field = async (f: () => Promise<unknown>): Promise<unknown> => {
      const err = await f().then(() => undefined, (e: unknown) => e);
      return isGatewayError(err, 'CEG_MALFORMED_REQUEST') ? err.details.field : err;
    };
    expect(await field(() => dl.purge('sub-dl', { deadLetters: [{ partition: 0, offset: '0' }, { topic: 'other.dlq', partition: 0, offset: '0' }] }))).toBe('deadLetters[1].topic');
    expect(await field(() => dl.redrive('sub-dl', { deadLetters: [{ topic: 'sub-dl', partition: 0, offset: '0' }] }))).toBe('deadLetters[0].topic');
    expect(await field(() => dl.purge('sub-dl', { deadLetters: [{ partition: -1, offset: '0' }] }))).toBe('deadLetters[0].partition');
    expect(await field(() => dl.redrive('sub-dl', { deadLetters: [{ partition: 0, offset: '0x1' }] }))).toBe('deadLetters[0].offset');
    // No dead-letter topic yet: everything asked is not found.
    expect(await dl.purge('sub-dl', { deadLetters: [{ topic: 'sub-dl.dlq', partition: 0, offset: '3' }] })).toEqual({ purged: 0, items: [], notFound: [{ partition: 0, offset: '3' }] });
  });
});

describe('route request shapes', () => {
  it('ids or all; no body purges all only where allowed; each problem names its field', () => {
    expect(parseSelection({ ids: ['a', 'b', 'a'] }, false)).toEqual({ ids: ['a', 'b'] });
    expect(parseSelection({ all: true }, false)).toEqual({ all: true });
    expect(parseSelection(undefined, true)).toEqual({ all: true });
    const field = (body: unknown, emptyMeansAll = false): unknown => {
      const err = caught(() => parseSelection(body, emptyMeansAll));
      return isGatewayError(err, 'CEG_MALFORMED_REQUEST') ? err.details.field : err;
    };
    expect(field(undefined)).toBe('body');
    expect(field({}, true)).toBe('body'); // nothing selected: the body is named, not ids (not sent), and it is not "all"
    expect(field({})).toBe('body');
    expect(field([])).toBe('body');
    expect(field({ ids: [], all: true })).toBe('body');
    expect(field({ all: false })).toBe('all');
    expect(field({ ids: [] })).toBe('ids');
    expect(field({ ids: Array.from({ length: 1001 }, (_, i) => String(i)) })).toBe('ids');
    expect(field({ ids: ['ok', 7] })).toBe('ids[1]');
    expect(field({ ids: ['ok', ''] })).toBe('ids[1]');
    expect(field({ idz: ['x'] })).toBe('idz');
    expect(parseSelection({ events: [{ source: 'urn:a', id: 'x' }, { id: 'x', source: 'urn:b' }, { source: 'urn:a', id: 'x' }] }, false)).toEqual({ events: [{ source: 'urn:a', id: 'x' }, { source: 'urn:b', id: 'x' }] });
    expect(field({ events: [] })).toBe('events');
    expect(field({ events: [{ source: 'urn:a', id: 'x' }], ids: ['x'] })).toBe('body');
    expect(field({ events: [{ source: 'urn:a', id: 'x' }, { source: 'urn:a' }] })).toBe('events[1].id');
    expect(field({ events: [{ source: 'x'.repeat(4097), id: 'x' }] })).toBe('events[0].source');
    expect(parseSelection({ deadLetters: [{ partition: 0, offset: '7' }, { topic: 't.dlq', partition: 2, offset: '9223372036854775807', time: '2026-01-01T00:00:00.000Z' }] }, false)).toEqual({ deadLetters: [{ partition: 0, offset: '7' }, { topic: 't.dlq', partition: 2, offset: '9223372036854775807' }] });
    expect(field({ deadLetters: [] })).toBe('deadLetters');
    expect(field({ deadLetters: [{ partition: 0, offset: '7' }], events: [{ source: 'urn:a', id: 'x' }] })).toBe('body');
    expect(field({ deadLetters: [{ partition: 0, offset: '7' }], all: true })).toBe('body');
    expect(field({ deadLetters: [{ partition: 0, offset: '7' }, { partition: 0, offset: 7 }] })).toBe('deadLetters[1].offset');
    expect(field({ deadLetters: [{ partition: Number.NaN, offset: '7' }] })).toBe('deadLetters[0].partition');
    expect(field({ deadLetters: [{ partition: 0, offset: '9223372036854775808' }] })).toBe('deadLetters[0].offset');
    expect(field({ deadLetters: [{ partition: 0, offset: '00' }] })).toBe('deadLetters[0].offset');
    expect(field({ deadLetters: [{ partition: 0, offset: '1', topic: 5 }] })).toBe('deadLetters[0].topic');
    expect(field({ deadLetters: [{ partition: 0, offset: '1', source: 'urn:a' }] })).toBe('deadLetters[0].source');
    expect(parseListQuery({ limit: '25', after: 'abc' })).toEqual({ limit: 25, after: 'abc' });
    expect(caught(() => parseListQuery({ limit: '-1' }))).toMatchObject({ details: { field: 'limit' } });
    expect(caught(() => parseListQuery({ limit: ['1', '2'] }))).toMatchObject({ details: { field: 'limit' } });
    expect(caught(() => parseListQuery({ limt: '5' }))).toMatchObject({ code: 'CEG_INVALID_PARAMETER', details: { field: 'limt' } });
  });
});
