/**
 * Fault test: the topic follower behind the subscription definitions and the replay audit log
 * (src/bus/follow/topic-follower.ts) across a broker SIGKILL and restart. Break report: on
 * @platformatic/kafka the follower's read ended ("metadata failed 6 times … ECONNREFUSED") about
 * 10 s into the outage and was never started again — the gateway kept answering ready with a stale
 * set of subscriptions (a pause made on another instance never applied; it kept delivering). Now a
 * read that ends is started again at the next offsets: a definition written after the restart, by
 * another client, is applied, and nothing applied before is applied twice. Both clients, on a
 * private broker of this file's own.
 * The four cases (two per client) go through ONE outage: each is set up before the kill, and after
 * the restart all four are checked at once, each in its own test (four outages one after the other
 * took 200 s a run, most of it the outage and the clients' way back, the same for each). Each case
 * has its own transports and topic, so they do not see each other.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopicFollower } from '../../src/bus/follow/topic-follower.js';
import { silentLogger } from '../../src/observability/index.js';
import type { Read, TopicSpec, Transport } from '../../src/transport/index.js';
import { KAFKA_CLIENTS, transportOn } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
/**
 * Short client timeouts and few retries, so the client gives up on the dead broker within the outage.
 * The session timeout is the broker's least (group.min.session.timeout.ms, 6 s): a kafkajs read is a
 * member of a throw-away consumer group, and the consumer it starts again after the restart joins as
 * a new member, let in once the member the broker remembers from before the kill has timed out: the
 * kafkajs cases ended 30 s after the restart with the default 30 s session, 7 s with this one.
 */
const TIMEOUTS = { connectionTimeoutMs: 1_000, requestTimeoutMs: 2_000, retries: 2, initialRetryTimeMs: 100, maxRetryTimeMs: 500, sessionTimeoutMs: 6_000 };

/** One case around the shared outage: `before` runs before the kill, `after` once the broker is back (it asserts). */
interface Case {
  /** The case's topic, created before `before` by a client with the default timeouts. */
  readonly topic: TopicSpec;
  before(): Promise<void>;
  after(): Promise<void>;
  /** Closes what the case opened; never rejects. */
  close(): Promise<void>;
}

/** The follower applies a record written after the restart by another client, and none twice. */
function followerCase(client: KafkaClient): Case {
  const topic = uniqueName(`follower-${client}`);
  const spec: TopicSpec = { name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' };
  const following = transportOn({ clientId: `follower-${client}`, brokers: broker.brokers, ...TIMEOUTS }, client);
  let writer: Transport | undefined;
  const applied: string[] = [];
  const follower = new TopicFollower({ transport: following, spec, apply: (r) => applied.push(dec.decode(r.value ?? new Uint8Array())), log: silentLogger(), label: 'the test topic' });
  const record = (v: string): { key: Uint8Array; value: Uint8Array; headers: [] } => ({ key: enc.encode(v), value: enc.encode(v), headers: [] });
  return {
    topic: spec,
    async before() {
      await follower.start(60_000);
      await follower.write([record('before')], 30_000);
      expect(applied).toEqual(['before']);
    },
    async after() {
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
    },
    async close() {
      await Promise.allSettled([follower.stop(), following.close(), writer?.close()]);
    },
  };
}

/** A read from latest hands on every record written after the restart, each once (or ends, having handed on only what it should). */
function readCase(client: KafkaClient): Case {
  const topic = uniqueName(`follower-read-${client}`);
  const spec: TopicSpec = { name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' };
  const reading = transportOn({ clientId: `follower-read-${client}`, brokers: broker.brokers, ...TIMEOUTS }, client);
  const writer = (): Transport => transportOn({ clientId: `follower-read-writer-${client}`, brokers: broker.brokers }, client);
  let w = writer();
  const seen: string[] = [];
  let read: Read | undefined;
  // A client that gives up ends the read: judged by what it handed on.
  let ended = false;
  return {
    topic: spec,
    async before() {
      await reading.ensureTopics([spec]);
      await w.produce(topic, [{ key: null, value: enc.encode('old'), headers: [] }]);
      read = await reading.read({ topics: [topic], from: { kind: 'latest' } }, (r) => {
        seen.push(dec.decode(r.value ?? new Uint8Array()));
        return Promise.resolve();
      });
      read.done.catch(() => undefined).finally(() => (ended = true)).catch(() => undefined);
      await w.produce(topic, [{ key: null, value: enc.encode('a'), headers: [] }]);
      await waitFor("'a' handed on", () => seen.includes('a'), 30_000);
      await w.close();
    },
    async after() {
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
      const r = read!;
      read = undefined;
      await r.stop();
    },
    async close() {
      await Promise.allSettled([read?.stop(), reading.close(), w.close()]);
    },
  };
}

let broker: PrivateBroker;
const cases = new Map<string, Case>();
/** Each case's outcome after the outage (its `before`'s failure, or its `after`'s), awaited by its test. */
const outcomes = new Map<string, Promise<void>>();

beforeAll(async () => {
  broker = await startPrivateBroker('follower');
  for (const client of KAFKA_CLIENTS) {
    cases.set(`follower ${client}`, followerCase(client));
    cases.set(`read ${client}`, readCase(client));
  }
  // The fresh broker's first CreateTopics and InitProducerId took longer than the cases' 2 s request
  // timeout on a loaded machine (the set-up failed before the kill, 1 run in 4): a client with the
  // default timeouts creates every case's topic and produces once first, so the cases' short-timeout
  // clients meet a broker that answers at once. The outage they are tested on is unchanged.
  await Promise.all(
    KAFKA_CLIENTS.map(async (client) => {
      const warmUp: TopicSpec = { name: uniqueName(`follower-warm-up-${client}`), partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' };
      const warm = transportOn({ clientId: `follower-warm-up-${client}`, brokers: broker.brokers }, client);
      try {
        await warm.ensureTopics([warmUp, ...[...cases.entries()].filter(([n]) => n.endsWith(client)).map(([, c]) => c.topic)]);
        await warm.produce(warmUp.name, [{ key: null, value: enc.encode('warm-up'), headers: [] }]);
      } finally {
        await warm.close();
      }
    }),
  );
  const names = [...cases.keys()];
  const prepared = await Promise.allSettled(names.map((n) => cases.get(n)!.before()));

  broker.signal('SIGKILL');
  await waitFor('the broker to be gone', () => broker.pid() === undefined, 15_000);
  // Longer than the clients' retries (where a read gives up, it gives up within this).
  await new Promise((r) => setTimeout(r, 15_000));
  await broker.restart();

  names.forEach((n, i) => {
    const p = prepared[i]!;
    const outcome = p.status === 'rejected' ? Promise.reject(p.reason as Error) : cases.get(n)!.after();
    outcome.catch(() => undefined); // reported by the case's own test
    outcomes.set(n, outcome);
  });
}, 300_000); // the broker's start (120 s allowed before), the cases' set-up, the outage and the restart
afterAll(async () => {
  await Promise.allSettled([...outcomes.values()]);
  await Promise.allSettled([...cases.values()].map((c) => c.close()));
  await broker?.stop();
}, 60_000);

/** The case's outcome (a case the beforeAll never got to fails its test). */
function outcomeOf(name: string): Promise<void> {
  return outcomes.get(name) ?? Promise.reject(new Error(`case ${name} did not run`));
}

describe.each(KAFKA_CLIENTS)('a topic follower across a broker restart (client %s)', (client) => {
  it('applies a record written after the restart by another client, and none twice', async () => {
    await outcomeOf(`follower ${client}`);
  }, 240_000);

  it('a read from latest hands on every record written after the restart, each once: kafkajs restarted its consumer from the start or the end', async () => {
    await outcomeOf(`read ${client}`);
  }, 240_000);
});
