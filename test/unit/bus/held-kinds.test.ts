/**
 * Retries and redrives of a kind the subscription's owner may no longer read (docs/security.md
 * "Revoking a permission"), on the in-memory transport: the gateway runs such a subscription with
 * the kinds still permitted in `kinds` and the others in `heldKinds`. A retry or redrive record of
 * a held kind is this subscription's own (its headers name a topic of a stored kind), so it is not
 * "forged": it is dead-lettered with its original topic, partition and offset and the reason, never
 * delivered, and a redrive of that dead letter once the kind is permitted again delivers it — a
 * structured-mode record too (its type known only once decoded). The dead-letter operations given
 * the held kinds (DeadLetters.list / redrive `held`) list such dead letters without the event and
 * skip them in a redrive, unmarked, so they are redriven once the kind is no longer held.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DeadLetters, heldListingProblem, heldRedriveSkip } from '../../../src/bus/deadletters/index.js';
import { deadLetter, deadLetterTopic, heldReason, redriveHeaders, redriveTopic, retryTopic } from '../../../src/bus/subscriber/index.js';
import { deadLetterHeaders, retryHeaders } from '../../../src/bus/subscriber/failure-headers.js';
import type { Subscription } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import type { RecordHeader, TransportRecord } from '../../../src/transport/port.js';
import { PRICE_TOPIC, priceLoaded, strategySignal } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { readRecords, subscriberFixtures } from './helpers.js';

const SUB = 'sub-held';
const policy = retryPolicy({ maxAttempts: 3, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 });
const fixtures = subscriberFixtures({ subscription: SUB, retry: policy, startFrom: 'earliest' });
afterEach(fixtures.cleanup);

const text = (r: TransportRecord, name: string): string | undefined => {
  const h = r.headers.find(([n]) => n === name);
  return h === undefined ? undefined : new TextDecoder().decode(h[1]);
};

describe('a subscription with held kinds (its owner may no longer read them)', () => {
  it('dead-letters their retries and redrives with the original position and the reason; other kinds flow; a foreign topic is still forged', async () => {
    const fx = await fixtures.setup();
    const signalTopic = fx.catalog.byName('StrategySignal')!.topic.name;
    // Records of both kinds as they were first written (the templates of the retry and redrive records).
    const signal = fx.publisher.publish('StrategySignal', strategySignal())!;
    const price = fx.publisher.publish('PriceLoadingCompleted', priceLoaded('HELD/USD', 'H1'))!;
    await Promise.all([signal.delivered, price.delivered]);
    const [signalRecord] = await readRecords(fx.transport, signalTopic, 1);
    const [priceRecord] = await readRecords(fx.transport, PRICE_TOPIC, 1);

    const handled: string[] = [];
    const s: Subscription = await fx.sub({ kinds: ['PriceLoadingCompleted'], heldKinds: ['StrategySignal'], ordering: 'none', startFrom: 'latest', handler: (e) => Promise.resolve(void handled.push(e.attributes.id)) });
    const origin = (r: TransportRecord) => ({ topic: r.topic, partition: r.partition, offset: r.offset });
    const retry = (r: TransportRecord): RecordHeader[] => retryHeaders({ subscription: SUB, attempt: 1, notBeforeMs: Date.now(), firstFailureMs: Date.now() - 1000, origin: origin(r) });
    const redrive = (r: TransportRecord, topic = r.topic): RecordHeader[] => redriveHeaders({ subscription: SUB, count: 1, origin: { ...origin(r), topic }, atMs: Date.now(), deadLetter: { partition: 0, offset: 0n } });
    const as = (r: TransportRecord, extra: RecordHeader[]) => ({ key: r.key, value: r.value, headers: [...r.headers, ...extra] });

    await fx.transport.produce(retryTopic(SUB), [as(signalRecord!, retry(signalRecord!)), as(priceRecord!, retry(priceRecord!))]);
    await fx.transport.produce(redriveTopic(SUB), [as(signalRecord!, redrive(signalRecord!)), as(signalRecord!, redrive(signalRecord!, 'foreign.topic'))]);
    await waitFor('the price retry handled, three signal records dead-lettered', () => handled.length === 1 && s.stats().deadLettered === 3, 5000, 5);
    expect(handled).toEqual([price.id]);

    const dead = await readRecords(fx.transport, deadLetterTopic(SUB), 3);
    const reasons = dead.map((r) => text(r, 'dlq_reason')!);
    const held = dead.filter((r) => text(r, 'dlq_reason')!.includes('may no longer read StrategySignal'));
    expect(held, reasons.join('\n')).toHaveLength(2);
    for (const r of held) {
      // Where the event was first read, not the retry or redrive topic: a later redrive accepts it.
      expect([text(r, 'dlq_source_topic'), text(r, 'dlq_source_partition'), text(r, 'dlq_source_offset')]).toEqual([signalTopic, String(signalRecord!.partition), signalRecord!.offset.toString()]);
      expect(text(r, 'ce_id')).toBe(signal.id);
    }
    // The retry keeps its attempts; the redrive its count.
    expect(held.map((r) => text(r, 'dlq_attempts')).sort()).toEqual(['1', '1']);
    expect(held.map((r) => text(r, 'dlq_redriven') ?? '-').sort()).toEqual(['-', '1']);
    // A topic of no stored kind is still refused as forged.
    expect(reasons.filter((x) => x.startsWith('poison: redrive-topic record with invalid redrive headers'))).toHaveLength(1);
    await s.unsubscribe();

    // The permission is back: the subscription runs with both kinds; the dead letter redriven is delivered.
    const again = await fx.sub({ kinds: ['PriceLoadingCompleted', 'StrategySignal'], ordering: 'none', startFrom: 'latest', handler: (e) => Promise.resolve(void handled.push(e.attributes.id)) });
    const dl = held.find((r) => text(r, 'dlq_redriven') === undefined)!;
    const redriven = redriveHeaders({ subscription: SUB, count: 1, origin: { topic: text(dl, 'dlq_source_topic')!, partition: Number(text(dl, 'dlq_source_partition')), offset: BigInt(text(dl, 'dlq_source_offset')!) }, atMs: Date.now(), deadLetter: { partition: dl.partition, offset: dl.offset } });
    await fx.transport.produce(redriveTopic(SUB), [{ key: dl.key, value: dl.value, headers: [...dl.headers.filter(([n]) => !n.startsWith('dlq_')), ...redriven] }]);
    await waitFor('the redriven signal delivered', () => handled.includes(signal.id), 5000, 5);
    expect(again.stats().deadLettered).toBe(0);
  });
});

describe('held kinds: structured-mode records, and the dead-letter operations', () => {
  const enc = new TextEncoder();
  /** A structured-mode StrategySignal record (JSON CloudEvent; the type is in the value, not in a header). */
  const structuredSignal = (id: string, extra: RecordHeader[]) => ({
    key: null,
    value: enc.encode(JSON.stringify({ specversion: '1.0', id, source: 'urn:partner:pub', type: 'b785f117-3e61-4864-89c3-4accf13140c2', time: '2022-03-15T12:00:05.000Z', datacontenttype: 'application/json', data: strategySignal() })),
    headers: [['content-type', enc.encode('application/cloudevents+json')] as RecordHeader, ...extra],
  });

  it('a structured-mode retry or redrive of a held kind is dead-lettered with its original position, not passed over as another kind', async () => {
    const fx = await fixtures.setup();
    const signalTopic = fx.catalog.byName('StrategySignal')!.topic.name;
    const s = await fx.sub({ kinds: ['PriceLoadingCompleted'], heldKinds: ['StrategySignal'], ordering: 'none', startFrom: 'latest', handler: () => Promise.resolve(undefined) });
    const origin = { topic: signalTopic, partition: 0, offset: 7n };
    await fx.transport.produce(retryTopic(SUB), [structuredSignal('structured-retry', retryHeaders({ subscription: SUB, attempt: 2, notBeforeMs: Date.now(), firstFailureMs: Date.now() - 1000, origin }))]);
    await fx.transport.produce(redriveTopic(SUB), [structuredSignal('structured-redrive', redriveHeaders({ subscription: SUB, count: 3, origin, atMs: Date.now(), deadLetter: { partition: 0, offset: 0n } }))]);
    await waitFor('both dead-lettered', () => s.stats().deadLettered === 2, 5000, 5);
    expect(s.stats().skipped).toBe(0);
    const dead = await readRecords(fx.transport, deadLetterTopic(SUB), 2);
    for (const r of dead) {
      expect(text(r, 'dlq_reason')).toBe(heldReason('StrategySignal'));
      expect([text(r, 'dlq_source_topic'), text(r, 'dlq_source_partition'), text(r, 'dlq_source_offset')]).toEqual([signalTopic, '0', '7']);
    }
    expect(dead.map((r) => [text(r, 'dlq_attempts'), text(r, 'dlq_redriven') ?? '-']).sort()).toEqual([
      ['1', '3'],
      ['2', '-'],
    ]);
  });

  it('DeadLetters given held kinds lists their dead letters without the event and skips them in a redrive, unmarked; without, they are redriven', async () => {
    const fx = await fixtures.setup();
    const s = await fx.sub({ kinds: ['PriceLoadingCompleted', 'StrategySignal'], startFrom: 'earliest', handler: () => Promise.resolve(deadLetter('refused')) });
    const signal = fx.publisher.publish('StrategySignal', strategySignal())!;
    const price = fx.publisher.publish('PriceLoadingCompleted', priceLoaded('DL/USD', 'H1'))!;
    await Promise.all([signal.delivered, price.delivered]);
    await waitFor('two dead letters', () => s.stats().deadLettered === 2, 5000, 5);
    await s.unsubscribe();
    // A structured-mode dead letter of the held kind as well: its kind is known only once decoded.
    const signalTopic = fx.catalog.byName('StrategySignal')!.topic.name;
    const info = { reason: 'refused', attempts: 1, firstFailureMs: Date.now(), lastFailureMs: Date.now(), origin: { topic: signalTopic, partition: 0, offset: 3n }, subscription: SUB };
    // A sink that echoed the event in its answer: the excerpt carries the held kind's data.
    const echoed = { ...info, failure: { sink: 'http://127.0.0.1:1/x', status: 500, excerpt: 'echo: {"signal":"BUY EUR/USD"}' } };
    await fx.transport.produce(deadLetterTopic(SUB), [structuredSignal('structured-dl', deadLetterHeaders(info)), structuredSignal('structured-echo', deadLetterHeaders(echoed))]);
    const dl = new DeadLetters({ transport: fx.transport, codec: fx.codec });
    const held = ['StrategySignal'];

    const page = await dl.list(SUB, {}, held);
    const byId = new Map(page.items.map((i) => [i.id, i]));
    for (const id of [signal.id, 'structured-dl', 'structured-echo']) {
      expect(byId.get(id)?.event, id).toBeNull();
      expect(byId.get(id)?.excerpt, id).toBeNull();
      expect(byId.get(id)?.eventProblem, id).toBe(heldListingProblem('StrategySignal'));
    }
    expect(byId.get('structured-echo')?.lastStatus).toBe(500);
    expect(byId.get(price.id)?.event).not.toBeNull();
    expect(byId.get(price.id)?.eventProblem).toBeUndefined();
    // Without held kinds the listing is as before.
    const plain = await dl.list(SUB);
    expect(plain.items.every((i) => i.event !== null)).toBe(true);
    expect(plain.items.find((i) => i.id === 'structured-echo')?.excerpt).toContain('BUY EUR/USD');

    const first = await dl.redrive(SUB, { all: true }, held);
    expect(first.redriven).toBe(1);
    expect(first.items.map((i) => i.id)).toEqual([price.id]);
    expect(first.skipped.map((x) => [x.id, x.reason]).sort()).toEqual([
      [signal.id, heldRedriveSkip('StrategySignal')],
      ['structured-dl', heldRedriveSkip('StrategySignal')],
      ['structured-echo', heldRedriveSkip('StrategySignal')],
    ].sort());
    // By id too; nothing of the held kind went to the redrive topic, and nothing was marked.
    const byIds = await dl.redrive(SUB, { ids: [signal.id] }, held);
    expect([byIds.redriven, byIds.notFound, byIds.skipped.map((x) => x.reason)]).toEqual([0, [], [heldRedriveSkip('StrategySignal')]]);
    expect((await fx.transport.endOffsets(redriveTopic(SUB)))[0]!.offset).toBe(1n);
    expect((await dl.list(SUB, {}, held)).items.filter((i) => i.redrivenAt !== null).map((i) => i.id)).toEqual([price.id]);

    // The permission is back: the same dead letters are redriven.
    const later = await dl.redrive(SUB, { all: true });
    expect(later.redriven).toBe(3);
    expect(later.items.map((i) => i.deadLetter.offset).sort()).toEqual(first.skipped.map((x) => x.deadLetter.offset).sort());
    expect(later.skipped.map((x) => x.reason)).toEqual(['redriven already']);
  });
});
