/**
 * First-cut subscription on the real broker: a record that is not registry-framed, one with no
 * CloudEvents headers, one with a repeated ce_ header and an event without data on a topic that
 * is not compacted (a tombstone means nothing there) never stop the consumer; they go to the
 * dead-letter topic with their reason and source coordinates, and the valid events behind them
 * are handled.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC, priceLoaded } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import type { Envelope } from '../../src/envelope/types.js';
import type { TransportRecord } from '../../src/transport/port.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: true });
});
afterAll(async () => {
  await gw?.close();
});

describe('subscription with poison records on Kafka', () => {
  it('dead-letters poison records with reason and coordinates, a tombstone on a topic that is not compacted too, and handles every valid event', async () => {
    const subscription = uniqueName('it-poison');
    const handled: Envelope[] = [];
    const sub = await gw.gateway.subscribe({ subscription, kinds: ['PriceLoadingCompleted'], handler: async (e) => {
      // Other tests or a benchmark may write to the same topic: keep only this test's key.
      if (e.attributes.partitionkey === 'POISON-TEST_H1') handled.push(e);
    } });
    const key = enc.encode('POISON-TEST_H1');
    const ce = (id: string): [string, Uint8Array][] => [
      ['ce_specversion', enc.encode('1.0')],
      ['ce_id', enc.encode(id)],
      ['ce_source', enc.encode('urn:test')],
      ['ce_type', enc.encode(PRICE_LOADING_COMPLETED)],
    ];
    const t = gw.gateway.transport;
    const notFramed = await t.produce(PRICE_TOPIC, [{ key, value: enc.encode('{"not":"avro"}'), headers: ce('p-1') }]);
    const noHeaders = await t.produce(PRICE_TOPIC, [{ key, value: enc.encode('plain'), headers: [] }]);
    const repeated = await t.produce(PRICE_TOPIC, [{ key, value: null, headers: [...ce('p-3'), ['ce_id', enc.encode('p-3b')]] }]);
    const tombstone = await t.produce(PRICE_TOPIC, [{ key, value: null, headers: [...ce('tomb-1'), ['ce_partitionkey', key]] }]);
    const valid = gw.gateway.publisher().publish('PriceLoadingCompleted', priceLoaded('POISON/TEST', 'H1'));
    await valid!.delivered;

    await waitFor('the valid event handled', () => handled.length >= 1, 30_000);
    const dlq: TransportRecord[] = [];
    const reader = await t.consume({ group: `dlq-reader-${randomUUID()}`, topics: [`${subscription}.dlq`], startFrom: 'earliest' }, async (r) => void dlq.push(r));
    await waitFor('four dead letters', () => dlq.length >= 4, 30_000);
    await reader.stop();
    await sub.unsubscribe();

    expect(handled.map((e) => e.attributes.id)).toEqual([valid!.id]);
    const header = (r: TransportRecord, name: string): string | undefined => {
      const h = r.headers.find(([n]) => n === name);
      return h && dec.decode(h[1]);
    };
    expect(dlq).toHaveLength(4);
    expect(dlq.map((r) => header(r, 'dlq_source_offset'))).toEqual([notFramed[0]!.offset.toString(), noHeaders[0]!.offset.toString(), repeated[0]!.offset.toString(), tombstone[0]!.offset.toString()]);
    for (const r of dlq) {
      expect(header(r, 'dlq_source_topic')).toBe(PRICE_TOPIC);
      expect(header(r, 'dlq_subscription')).toBe(subscription);
      expect(header(r, 'dlq_attempts')).toBe('1');
      expect(dec.decode(r.key)).toBe('POISON-TEST_H1');
    }
    expect(header(dlq[0]!, 'dlq_reason')).toMatch(/poison: .*(framed|magic)/i);
    expect(header(dlq[1]!, 'dlq_reason')).toMatch(/poison: .*specversion/);
    expect(header(dlq[2]!, 'dlq_reason')).toMatch(/poison: duplicate header ce_id/);
    expect(header(dlq[3]!, 'dlq_reason')).toMatch(/^poison: event without data on a topic that is not compacted/);
    expect(dec.decode(dlq[0]!.value)).toBe('{"not":"avro"}');
    expect(sub.stats().deadLettered).toBe(4);
  });
});
