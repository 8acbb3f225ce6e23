/**
 * Fault test: the read-only calls of the transport port (`tail`, `trace`, the work check, replay
 * and the console use them) against a broker that stopped answering (SIGSTOP: its sockets stay
 * open, every request times out). A timeout of a read is a broker that does not answer, not an
 * event whose fate is unknown: each call rejects with CEG_BROKER_UNAVAILABLE, retriable (src/transport/topics.ts
 * `readFailure`), not with CEG_DELIVERY_TIMEOUT (which tells a publisher "this event may have been
 * written"). Asserted on both clients, on a transport that was connected before the pause and on
 * one whose first call meets the paused broker (the kafkajs adapter connects its admin alone for
 * reads). The broker is this test's own, never the shared stack's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import type { Transport } from '../../src/transport/index.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { createKafkaTransport, createPlatformaticTransport } from '../../src/transport/index.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';

/** Short client timeouts, so that a call against the paused broker gives up within seconds. */
const TIMEOUTS = { connectionTimeoutMs: 1_000, requestTimeoutMs: 1_500, retries: 1, initialRetryTimeMs: 100, maxRetryTimeMs: 200, metadataMaxAgeMs: 0 };

let broker: PrivateBroker;
beforeAll(async () => {
  broker = await startPrivateBroker('readtimeout');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

function transportFor(client: KafkaClient): Transport {
  const input = { clientId: `read-timeout-${client}`, brokers: broker.brokers, ...TIMEOUTS };
  return client === 'kafkajs' ? createKafkaTransport(input) : createPlatformaticTransport(input);
}

/** What `call` rejected with (fails the test when it resolves). */
async function rejection(call: () => Promise<unknown>): Promise<unknown> {
  return call().then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? String(x) : x))}`);
    },
    (e: unknown) => e,
  );
}

function expectBrokerUnavailable(err: unknown, call: string): void {
  expect(err, `${call}: ${String(err)}`).toBeInstanceOf(GatewayError);
  const e = err as GatewayError;
  expect(e.code, `${call}: ${e.message}`).toBe('CEG_BROKER_UNAVAILABLE');
  expect(e.retriable, `${call}: ${e.message} ${JSON.stringify(e.details)}`).toBe(true);
}

describe.each(KAFKA_CLIENTS)('read-only calls against a paused broker (client %s)', (client) => {
  it('reject with CEG_BROKER_UNAVAILABLE (retriable), connected before the pause or not', async () => {
    const topic = uniqueName(`readtimeout-${client}`);
    const group = uniqueName(`readtimeout-${client}-group`);
    const connected = transportFor(client);
    const fresh = transportFor(client);
    try {
      await connected.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      await connected.produce(topic, [{ key: null, value: Buffer.from('x'), headers: [] }]);
      // Every call answers while the broker runs (so a rejection below is the pause's doing).
      expect((await connected.endOffsets(topic)).length).toBe(2);
      broker.signal('SIGSTOP');
      try {
        const calls: [string, (t: Transport) => Promise<unknown>][] = [
          ['endOffsets', (t) => t.endOffsets(topic)],
          ['offsetsAt', (t) => t.offsetsAt(topic, { kind: 'timestamp', timestampMs: Date.now() - 60_000 })],
          ['committedOffsets', (t) => t.committedOffsets(group, topic)],
          ['maxMessageBytes', (t) => t.maxMessageBytes(topic)],
          ['partitionCount (a topic not yet looked up)', (t) => t.partitionCount(`${topic}-other`)],
        ];
        for (const [name, call] of calls) {
          expectBrokerUnavailable(await rejection(() => call(connected)), `connected ${name}`);
        }
        expectBrokerUnavailable(await rejection(() => fresh.endOffsets(topic)), 'first call of a fresh transport (endOffsets)');
      } finally {
        broker.signal('SIGCONT');
      }
      // The pause left nothing broken: both transports read once the broker answers again (the
      // fresh one had met the pause in the middle of its first connect).
      expect((await connected.endOffsets(topic)).length).toBe(2);
      expect((await fresh.endOffsets(topic)).length).toBe(2);
    } finally {
      await Promise.allSettled([connected.close(), fresh.close()]);
    }
  }, 180_000);
});
