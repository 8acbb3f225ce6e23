/**
 * Fault test: `consume()` as the first group call a broker ever gets. Kafka creates its offsets
 * topic (`__consumer_offsets`) at the first FindCoordinator and answers COORDINATOR_NOT_AVAILABLE
 * until it is created and loaded: every group call of a consumer's start (the 'latest' pins'
 * DescribeGroups and OffsetFetch, the first JoinGroup) meets a coordinator that is not there yet.
 * The same happens, for longer, on a broker restarted with a large offsets topic
 * (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR; stack-restart.kafka.test.ts).
 * Before: the clients retry such an answer only `retries` times on the connection they have
 * (here none, `retries: 0`), and consume() rejected with a retriable CEG_BROKER_UNAVAILABLE; its
 * callers (tests, the reconciler) had to try again. Now the transport waits for the coordinator
 * (src/transport/coordinator-wait.ts: backoff, bounded, each retry logged) and consume() resolves.
 * Each case on a broker of its own, started for it: the coordinator is missing only until the
 * first group call of the broker's life.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransportLogger, TransportRecord } from '../../../src/transport/index.js';
import type { KafkaClient } from '../../helpers/kafka-client.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { startPrivateBroker } from '../../helpers/private-broker.js';
import type { PrivateBroker } from '../../helpers/private-broker.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

/** The consuming transport: no client retry of its own, so the first group call of the broker meets the missing coordinator. */
const OPTIONS = { retries: 0, initialRetryTimeMs: 100, maxRetryTimeMs: 1_000, connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000 };

const CASES: readonly { readonly client: KafkaClient; readonly startFrom: 'latest' | 'earliest'; readonly path: string }[] = [
  { client: 'kafkajs', startFrom: 'latest', path: 'the start offsets (DescribeGroups, OffsetFetch)' },
  { client: 'platformatic', startFrom: 'latest', path: "the 'latest' pins (DescribeGroups, OffsetFetch)" },
  // No pins for 'earliest': the first group call is the member's first JoinGroup.
  { client: 'platformatic', startFrom: 'earliest', path: 'the first join (JoinGroup)' },
];

describe.each(CASES)('consume() as the first group call of a broker just started ($client, $startFrom: $path)', ({ client, startFrom }) => {
  let broker: PrivateBroker;
  beforeAll(async () => {
    broker = await startPrivateBroker(`coord-${client}-${startFrom}`);
  }, 120_000);
  afterAll(async () => {
    await broker?.stop();
  }, 60_000);

  it('resolves without a retry by the caller, the wait for the coordinator logged, and delivers', { timeout: 90_000 }, async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const note = (obj: Record<string, unknown>, msg: string): void => void lines.push({ obj, msg });
    const logger: TransportLogger = { debug: () => undefined, info: note, warn: note, error: note };
    const t = transportOn({ clientId: uniqueName(`coord-${client}`), brokers: broker.brokers, logger, ...OPTIONS }, client);
    // Topics and records through another transport: kafkajs's idempotent producer refuses `retries: 0`
    // (neither creating a topic nor producing asks a group coordinator).
    const setup = transportOn({ clientId: uniqueName(`coord-setup-${client}`), brokers: broker.brokers, retries: 2 }, client);
    const topic = uniqueName(`coord-${client}`);
    const group = uniqueName(`coord-group-${client}`);
    const handled: string[] = [];
    const handler = (r: TransportRecord): Promise<void> => {
      handled.push(Buffer.from(r.value ?? new Uint8Array()).toString());
      return Promise.resolve();
    };
    try {
      await setup.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      // Once: no waitFor around it (the point of the test).
      const c = await t.consume({ group, topics: [topic], startFrom }, handler);
      try {
        await setup.produce(topic, [{ key: null, value: Buffer.from('after the start'), headers: [] }]);
        await waitFor('the record written after the start', () => handled.includes('after the start'), 30_000);
      } finally {
        await c.stop();
      }
      // The coordinator was missing at the start and waited for (not a lucky broker).
      const waits = lines.filter((w) => w.msg.startsWith('the group coordinator is not available yet'));
      expect(waits.length, JSON.stringify(lines)).toBeGreaterThan(0);
      expect(waits.every((w) => w.obj.group === group)).toBe(true);
      // The broker answered all along: no outage was logged for it.
      expect(lines.filter((l) => l.msg.startsWith('kafka: broker unreachable'))).toEqual([]);
    } finally {
      await Promise.allSettled([t.close(), setup.close()]);
    }
  });
});
