/**
 * A subscription's dead-letter topic deleted by an operator while the subscription runs, then a
 * poison record arrives (2026-12-06). Before: the dead-letter produce was refused as an unknown
 * topic (CEG_INVALID_NAME, not retriable), so was the fallback without the value, and the record
 * was counted lost and committed past: gone, with one error line. Now the subscriber creates its
 * dead-letter topic again with the settings it had (as it created it at start) and writes the dead
 * letter there, with a warning. Runs on this run's client (`KAFKA_CLIENT=kafkajs` for the other).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, PRICE_TOPIC } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import type { TransportRecord } from '../../src/transport/port.js';
import { rawKafka } from './consumer/members.js';

const enc = new TextEncoder();
let gw: TestGateway;
const created: string[] = [];
beforeAll(async () => {
  gw = await startGateway({ stack: true });
});
afterAll(async () => {
  await gw?.close();
  const admin = rawKafka().admin();
  await admin.connect();
  await admin.deleteTopics({ topics: created }).catch(() => undefined);
  await admin.disconnect();
});

it('a poison record after the dead-letter topic was deleted is dead-lettered into the topic created again, not lost', { timeout: 120_000 }, async () => {
  const subscription = uniqueName('it-dlq-gone');
  const dlqTopic = `${subscription}.dlq`;
  created.push(dlqTopic, `${subscription}.redrive`);
  const sub = await gw.gateway.subscribe({ subscription, kinds: ['PriceLoadingCompleted'], handler: async () => {} });
  const t = gw.gateway.transport;
  try {
    const admin = rawKafka().admin();
    await admin.connect();
    try {
      await admin.deleteTopics({ topics: [dlqTopic] });
      await waitFor('the dead-letter topic gone', async () => !(await admin.listTopics()).includes(dlqTopic), 30_000);
    } finally {
      await admin.disconnect();
    }
    const key = enc.encode('DLQ-GONE_H1');
    const [poison] = await t.produce(PRICE_TOPIC, [{ key, value: enc.encode('plain'), headers: [['ce_specversion', enc.encode('1.0')], ['ce_id', enc.encode(randomUUID())], ['ce_source', enc.encode('urn:test')], ['ce_type', enc.encode(PRICE_LOADING_COMPLETED)]] }]);
    const dlq: TransportRecord[] = [];
    await waitFor('the dead-letter topic created again', async () => (await t.partitionCount(dlqTopic).catch(() => 0)) > 0, 60_000);
    const reader = await t.consume({ group: `dlq-reader-${randomUUID()}`, topics: [dlqTopic], startFrom: 'earliest' }, async (r) => void dlq.push(r));
    try {
      await waitFor('the dead letter', () => dlq.length >= 1, 60_000);
    } finally {
      await reader.stop();
    }
    const header = (r: TransportRecord, name: string): string | undefined => {
      const h = r.headers.find(([n]) => n === name);
      return h === undefined ? undefined : Buffer.from(h[1]).toString();
    };
    expect(header(dlq[0]!, 'dlq_source_offset')).toBe(poison!.offset.toString());
    expect(Buffer.from(dlq[0]!.value ?? new Uint8Array()).toString()).toBe('plain');
    expect(sub.stats().lost).toBe(0);
  } finally {
    await sub.unsubscribe();
  }
});
