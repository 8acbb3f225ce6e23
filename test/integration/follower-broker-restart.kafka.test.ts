/**
 * Fault test: the topic follower behind the subscription definitions and the replay audit log
 * (src/bus/follow/topic-follower.ts) across a broker SIGKILL and restart. Break report: on
 * @platformatic/kafka the follower's read ended ("metadata failed 6 times … ECONNREFUSED") about
 * 10 s into the outage and was never started again — the gateway kept answering ready with a stale
 * set of subscriptions (a pause made on another instance never applied; it kept delivering). Now a
 * read that ends is started again at the next offsets: a definition written after the restart, by
 * another client, is applied, and nothing applied before is applied twice. Both clients, on a
 * private broker of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopicFollower } from '../../src/bus/follow/topic-follower.js';
import { silentLogger } from '../../src/observability/index.js';
import type { Transport } from '../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

let broker: PrivateBroker;
beforeAll(async () => {
  broker = await startPrivateBroker('follower');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

const enc = new TextEncoder();
const dec = new TextDecoder();
/** Short client timeouts and few retries, so the client gives up on the dead broker within the outage. */
const TIMEOUTS = { connectionTimeoutMs: 1_000, requestTimeoutMs: 2_000, retries: 2, initialRetryTimeMs: 100, maxRetryTimeMs: 500 };

describe.each(KAFKA_CLIENTS)('a topic follower across a broker restart (client %s)', (client) => {
  it('applies a record written after the restart by another client, and none twice', async () => {
    const topic = uniqueName(`follower-${client}`);
    const following = transportOn({ clientId: `follower-${client}`, brokers: broker.brokers, ...TIMEOUTS }, client);
    let writer: Transport | undefined;
    const applied: string[] = [];
    const follower = new TopicFollower({ transport: following, spec: { name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' }, apply: (r) => applied.push(dec.decode(r.value ?? new Uint8Array())), log: silentLogger(), label: 'the test topic' });
    const record = (v: string): { key: Uint8Array; value: Uint8Array; headers: [] } => ({ key: enc.encode(v), value: enc.encode(v), headers: [] });
    try {
      await follower.start(60_000);
      await follower.write([record('before')], 30_000);
      expect(applied).toEqual(['before']);

      broker.signal('SIGKILL');
      await waitFor('the broker to be gone', () => broker.pid() === undefined, 15_000);
      // Longer than the client's retries (where a read gives up, it gives up within this).
      await new Promise((r) => setTimeout(r, 15_000));
      await broker.restart();

      writer = transportOn({ clientId: `follower-writer-${client}`, brokers: broker.brokers }, client);
      await waitFor('a record written after the restart to be applied', async () => {
        if (!applied.includes('after')) {
          if (!(await writer!.produce(topic, [record('after')]).then(() => true, () => false))) return false;
          // One write is enough once it succeeded; give the follower time before writing again.
          await new Promise((r) => setTimeout(r, 2_000));
        }
        return applied.includes('after');
      }, 90_000, 250);
      await waitFor('following', () => follower.following, 30_000, 100);
      // Each record once: 'before' was not applied again by the read that started over.
      expect(applied.filter((v) => v === 'before')).toEqual(['before']);
    } finally {
      await Promise.allSettled([follower.stop(), following.close(), writer?.close()]);
    }
  }, 240_000);

  it('a read from latest hands on every record written after the restart, each once: kafkajs restarted its consumer from the start or the end', async () => {
    const topic = uniqueName(`follower-read-${client}`);
    const reading = transportOn({ clientId: `follower-read-${client}`, brokers: broker.brokers, ...TIMEOUTS }, client);
    const writer = (): Transport => transportOn({ clientId: `follower-read-writer-${client}`, brokers: broker.brokers }, client);
    let w = writer();
    const seen: string[] = [];
    try {
      await reading.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      await w.produce(topic, [{ key: null, value: enc.encode('old'), headers: [] }]);
      const read = await reading.read({ topics: [topic], from: { kind: 'latest' } }, (r) => {
        seen.push(dec.decode(r.value ?? new Uint8Array()));
        return Promise.resolve();
      });
      // A client that gives up ends the read: judged by what it handed on.
      let ended = false;
      read.done.catch(() => undefined).finally(() => (ended = true)).catch(() => undefined);
      await w.produce(topic, [{ key: null, value: enc.encode('a'), headers: [] }]);
      await waitFor("'a' handed on", () => seen.includes('a'), 30_000);
      await w.close();

      broker.signal('SIGKILL');
      await waitFor('the broker to be gone', () => broker.pid() === undefined, 15_000);
      await new Promise((r) => setTimeout(r, 15_000));
      await broker.restart();
      w = writer();
      // Written as soon as the broker takes it: before the reading client is back, if it is slow.
      await waitFor("'b' written", () => w.produce(topic, [{ key: null, value: enc.encode('b'), headers: [] }]).then(() => true, () => false), 60_000, 250);
      // Waits for the one or the other (the read that ended was waited out to the bound: 90 s a run).
      await waitFor("'b' handed on, or the read ended", () => seen.includes('b') || ended, 90_000, 250);
      // A read that ended (platformatic gives up after its retries) hands on nothing more: what it
      // handed on must still be right. kafkajs carries on; it must hand on 'b'.
      if (client === 'kafkajs') expect(seen).toContain('b');
      expect(seen.filter((v) => v !== 'b')).toEqual(['a']);
      expect(seen.filter((v) => v === 'b').length).toBeLessThanOrEqual(1);
      await read.stop();
    } finally {
      await Promise.allSettled([reading.close(), w.close()]);
    }
  }, 240_000);
});
