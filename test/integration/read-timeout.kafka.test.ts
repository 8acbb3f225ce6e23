/**
 * Fault test: the read-only calls of the transport port (`tail`, `trace`, the work check, replay
 * and the console use them) against a broker that stopped answering (SIGSTOP: its sockets stay
 * open, every request times out). A timeout of a read is a broker that does not answer, not an
 * event whose fate is unknown: each call rejects with CEG_BROKER_UNAVAILABLE, retriable (src/transport/topics.ts
 * `readFailure`), not with CEG_DELIVERY_TIMEOUT (which tells a publisher "this event may have been
 * written"). Asserted on both clients, on a transport that was connected before the pause and on
 * one whose first call meets the paused broker (the kafkajs adapter connects its admin alone for
 * reads); an offset commit the same (idempotent: no event's fate is unknown). Then the same kind of fault for the other clients of a transport: a produce during the
 * pause fails retriably, a consume started during it waits or fails retriably, and both work once
 * the broker answers (kafkajs 2.2.4 took such a broker as connected for good: `Broker not
 * connected`, not retriable, on every call; src/transport/kafka/kafkajs.ts). Last, a consumption
 * running before a 12 s pause goes on consuming after it, or ends retriably and works when started
 * again (both clients went on consuming on 2026-12-04, also on kafkajs before its Broker fix).
 * Each of the three cases runs on both clients through one pause (throughOnePause): a pause per
 * client made the file's pauses twice as long.
 * The broker is this test's own, never the shared stack's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Consumption } from '../../src/transport/index.js';
import { GatewayError } from '../../src/core/errors.js';
import type { Transport } from '../../src/transport/index.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { createKafkaTransport, createPlatformaticTransport } from '../../src/transport/index.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

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

/**
 * What `call` rejected with while the broker was paused. A call that resolves although the broker
 * is still stopped fails the test. One that resolves because the broker is no longer stopped (a
 * signal from outside this test; kept from happening by PrivateBroker's pid check, but a fault test
 * must not report the environment as the client's defect) is made again on a broker paused again,
 * at most twice.
 */
async function rejectionWhilePaused(call: () => Promise<unknown>): Promise<unknown> {
  for (let attempt = 1; ; attempt++) {
    if (!broker.paused()) await broker.pause();
    const outcome = await call().then(
      (value: unknown) => ({ value }),
      (error: unknown) => ({ error }),
    );
    if ('error' in outcome) return outcome.error;
    if (broker.paused() || attempt === 3) return rejection(() => Promise.resolve(outcome.value));
    console.warn(`read-timeout: the broker was resumed from outside this test while a call ran (attempt ${attempt}); pausing it again`);
  }
}

/**
 * `call`'s result once the broker answers again: retriable failures are tried again for up to 30 s
 * (a resumed broker takes a moment, and a caller retries those); any other failure, or 30 s of
 * retriable ones (a client stuck for good), fails the test.
 */
async function onceAnswering<T>(call: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof GatewayError) || !err.retriable || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function expectBrokerUnavailable(err: unknown, call: string): void {
  expect(err, `${call}: ${String(err)}`).toBeInstanceOf(GatewayError);
  const e = err as GatewayError;
  expect(e.code, `${call}: ${e.message}`).toBe('CEG_BROKER_UNAVAILABLE');
  expect(e.retriable, `${call}: ${e.message} ${JSON.stringify(e.details)}`).toBe(true);
}

/**
 * One client's part of a case that goes through a pause of the private broker: `before` runs while
 * the broker answers, `during` while it is stopped, `after` once it answers again (each may assert);
 * `close` releases what the case opened, whatever happened.
 */
interface PauseCase {
  before(): Promise<void>;
  during(): Promise<void>;
  after(): Promise<void>;
  close(): Promise<void>;
}

/** How a pause's cases are prepared: every `before` at once, or one client's after the other's. */
type Preparation = 'together' | 'one by one';

/**
 * Runs each client's case through ONE pause of the private broker (a case per client, each on
 * topics, groups and transports of its own; one client's pause after the other's doubled the
 * file's pauses): every `before` (at once, or one after the other: `prepare`); then SIGSTOP
 * (state T before anything is sent to the broker), every `during` at once, and SIGCONT once the
 * last has ended and at least `minPauseMs` has passed; then every `after` at once. A client's
 * outcome is the first of its phases to fail (its later phases are not run) or success; each
 * client's test awaits its own, so one client's failure is reported by that client's test.
 */
async function throughOnePause(cases: ReadonlyMap<KafkaClient, PauseCase>, prepare: Preparation, minPauseMs = 0): Promise<Map<KafkaClient, Promise<void>>> {
  const clients = [...cases.keys()];
  const prepared: PromiseSettledResult<void>[] = [];
  if (prepare === 'together') prepared.push(...(await Promise.allSettled(clients.map((c) => cases.get(c)!.before()))));
  else for (const c of clients) prepared.push(...(await Promise.allSettled([cases.get(c)!.before()])));
  let paused: PromiseSettledResult<void>[];
  await broker.pause();
  try {
    const held = new Promise((r) => setTimeout(r, minPauseMs));
    paused = await Promise.allSettled(clients.map((c, i) => (prepared[i]!.status === 'fulfilled' ? cases.get(c)!.during() : Promise.resolve())));
    await held;
  } finally {
    broker.signal('SIGCONT');
  }
  const outcomes = new Map<KafkaClient, Promise<void>>();
  clients.forEach((client, i) => {
    const failed = [prepared[i]!, paused[i]!].find((p) => p.status === 'rejected');
    const outcome = failed !== undefined ? Promise.reject(failed.reason as Error) : cases.get(client)!.after();
    outcome.catch(() => undefined); // reported by the client's own test
    outcomes.set(client, outcome);
  });
  return outcomes;
}

/**
 * Tests, one per client, of cases that go through one pause (throughOnePause) made in the
 * describe's `beforeAll`: `make` builds a client's case; `prepare` and `minPauseMs` as throughOnePause's.
 */
function describeThroughOnePause(title: string, test: string, make: (client: KafkaClient) => PauseCase, prepare: Preparation, minPauseMs = 0): void {
  describe(title, () => {
    const cases = new Map<KafkaClient, PauseCase>();
    let outcomes = new Map<KafkaClient, Promise<void>>();
    beforeAll(async () => {
      for (const client of KAFKA_CLIENTS) cases.set(client, make(client));
      outcomes = await throughOnePause(cases, prepare, minPauseMs);
    }, 180_000);
    afterAll(async () => {
      await Promise.allSettled([...outcomes.values()]);
      await Promise.allSettled([...cases.values()].map((c) => c.close()));
    }, 60_000);

    describe.each(KAFKA_CLIENTS)('client %s', (client) => {
      it(test, async () => {
        await (outcomes.get(client) ?? Promise.reject(new Error(`the case of ${client} did not run`)));
      }, 240_000);
    });
  });
}

/**
 * The read-only calls (and an offset commit) of a transport connected before the pause, and the
 * first call of a fresh transport, each rejected with CEG_BROKER_UNAVAILABLE (retriable) while the
 * broker is paused; both transports read once it answers again.
 */
function readCase(client: KafkaClient): PauseCase {
  const topic = uniqueName(`readtimeout-${client}`);
  const group = uniqueName(`readtimeout-${client}-group`);
  const connected = transportFor(client);
  // A new transport for each try of the first call (see rejectionWhilePaused); the last is checked after the pause.
  const freshOnes: Transport[] = [];
  const fresh = (): Transport => {
    freshOnes.push(transportFor(client));
    return freshOnes.at(-1)!;
  };
  return {
    async before() {
      await connected.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      await connected.produce(topic, [{ key: null, value: Buffer.from('x'), headers: [] }]);
      // Every call answers while the broker runs (so a rejection below is the pause's doing).
      expect((await connected.endOffsets(topic)).length).toBe(2);
    },
    async during() {
      const calls: [string, (t: Transport) => Promise<unknown>][] = [
        ['endOffsets', (t) => t.endOffsets(topic)],
        ['offsetsAt', (t) => t.offsetsAt(topic, { kind: 'timestamp', timestampMs: Date.now() - 60_000 })],
        ['committedOffsets', (t) => t.committedOffsets(group, topic)],
        ['maxMessageBytes', (t) => t.maxMessageBytes(topic)],
        ['partitionCount (a topic not yet looked up)', (t) => t.partitionCount(`${topic}-other`)],
        // Not a read, but no event's fate either: a commit is idempotent (it said "Event not confirmed in time").
        ['commitOffsets', (t) => t.commitOffsets(group, topic, [{ partition: 0, offset: 0n }])],
      ];
      // One after the other: each call meets a transport whose previous call timed out.
      for (const [name, call] of calls) {
        expectBrokerUnavailable(await rejectionWhilePaused(() => call(connected)), `connected ${name}`);
      }
      expectBrokerUnavailable(await rejectionWhilePaused(() => fresh().endOffsets(topic)), 'first call of a fresh transport (endOffsets)');
    },
    async after() {
      // The pause left nothing broken: both transports read once the broker answers again (the
      // fresh one had met the pause in the middle of its first connect).
      expect((await onceAnswering(() => connected.endOffsets(topic))).length).toBe(2);
      expect((await onceAnswering(() => freshOnes.at(-1)!.endOffsets(topic))).length).toBe(2);
    },
    async close() {
      await Promise.allSettled([connected.close(), ...freshOnes.map((t) => t.close())]);
    },
  };
}

/**
 * A producer and a consumer whose clients first connect to the paused broker: the produce fails
 * retriably, the consumption started then waits or fails retriably, and both work once it answers.
 */
function firstConnectCase(client: KafkaClient): PauseCase {
  const topic = uniqueName(`readtimeout-clients-${client}`);
  const setup = transportFor(client);
  const producing = transportFor(client);
  const consuming = transportFor(client);
  const seen: string[] = [];
  let consumption: Consumption | undefined;
  let pending: Promise<Consumption | undefined> | undefined;
  let pausedErr: unknown;
  const consume = (): Promise<Consumption> =>
    consuming.consume({ group: uniqueName(`readtimeout-clients-${client}-group`), topics: [topic], startFrom: 'earliest' }, (r) => {
      seen.push(Buffer.from(r.value ?? new Uint8Array()).toString());
      return Promise.resolve();
    });
  return {
    async before() {
      await setup.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      await setup.produce(topic, [{ key: null, value: Buffer.from('before'), headers: [] }]);
      // Looked up before the pause, so that the produce and the consume below connect their own
      // clients to the paused broker (on kafkajs, a lookup connects the admin alone).
      expect(await producing.partitionCount(topic)).toBe(2);
      expect(await consuming.partitionCount(topic)).toBe(2);
    },
    async during() {
      const err = await rejection(() => producing.produce(topic, [{ key: null, value: Buffer.from('paused'), headers: [] }]));
      expect(err, String(err)).toBeInstanceOf(GatewayError);
      expect((err as GatewayError).retriable, (err as GatewayError).message).toBe(true);
      // A consumption started now either waits for the broker or fails retriably (then it is
      // started again below); before the kafkajs fix it failed with `Broker not connected`.
      pending = consume().catch((e: unknown) => {
        pausedErr = e;
        return undefined;
      });
      await new Promise((r) => setTimeout(r, TIMEOUTS.requestTimeoutMs * 2));
    },
    async after() {
      consumption = await pending;
      if (consumption === undefined) {
        expect(pausedErr, String(pausedErr)).toBeInstanceOf(GatewayError);
        expect((pausedErr as GatewayError).retriable, (pausedErr as GatewayError).message).toBe(true);
        consumption = await onceAnswering(consume);
      }
      // The paused produce may have landed or not (indeterminate); 'after' must.
      await onceAnswering(() => producing.produce(topic, [{ key: null, value: Buffer.from('after'), headers: [] }]));
      await waitFor('both records consumed', () => seen.includes('before') && seen.includes('after'), 60_000);
    },
    async close() {
      await Promise.allSettled([consumption?.stop(), setup.close(), producing.close(), consuming.close()]);
    },
  };
}

// Prepared one client after the other, as when each client had a pause of its own: the first
// writes on the just-started broker (both clients' producer ids at once) timed out once at
// requestTimeoutMs on a loaded machine, before the pause.
describeThroughOnePause('read-only calls against a paused broker, both clients through one pause', 'reject with CEG_BROKER_UNAVAILABLE (retriable), connected before the pause or not', readCase, 'one by one');

describeThroughOnePause('a producer and a consumer against a paused broker, both clients through one pause', 'whose first connect meets the paused broker work once it answers', firstConnectCase, 'one by one');

/**
 * A consumption running before a 12 s pause (a member on each client, each on a topic and a group of
 * its own): `before` starts it and sees a record consumed, `after` runs once the broker answers again
 * (it asserts).
 */
function runningCase(client: KafkaClient): PauseCase {
  const topic = uniqueName(`readtimeout-longlived-${client}`);
  const group = uniqueName(`readtimeout-longlived-${client}-group`);
  const setup = transportFor(client);
  const consuming = transportFor(client);
  const seen: string[] = [];
  let consumption: Consumption | undefined;
  let restarted: Consumption | undefined;
  let ended: unknown;
  const consume = (): Promise<Consumption> =>
    consuming.consume({ group, topics: [topic], startFrom: 'earliest' }, (r) => {
      seen.push(Buffer.from(r.value ?? new Uint8Array()).toString());
      return Promise.resolve();
    });
  return {
    async before() {
      await setup.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      consumption = await consume();
      consumption.done.then(
        () => (ended = 'resolved without stop()'),
        (e: unknown) => (ended = e),
      );
      await setup.produce(topic, [{ key: null, value: Buffer.from('before'), headers: [] }]);
      await waitFor('the record produced before the pause consumed', () => seen.includes('before'), 60_000);
    },
    // Nothing to do while paused: the members' own requests meet the pause.
    during: () => Promise.resolve(),
    async after() {
      await onceAnswering(() => setup.produce(topic, [{ key: null, value: Buffer.from('after'), headers: [] }]));
      // Stuck for good (neither consumed nor ended) fails here.
      await waitFor("the record produced after the pause consumed, or the consumption ended", () => seen.includes('after') || ended !== undefined, 90_000);
      if (!seen.includes('after')) {
        expect(ended, String(ended)).toBeInstanceOf(GatewayError);
        expect((ended as GatewayError).retriable, (ended as GatewayError).message).toBe(true);
        restarted = await onceAnswering(consume);
        await waitFor("'after' consumed by the restarted consumption", () => seen.includes('after'), 60_000);
      }
    },
    async close() {
      await Promise.allSettled([consumption?.stop(), restarted?.stop(), setup.close(), consuming.close()]);
    },
  };
}

// Long enough for every request of the members (fetch, heartbeat, commit) to time out more than
// once, and for their sessions to run out on the broker's clock when it resumes.
describeThroughOnePause('one 12 s pause under a running consumption of each client', 'a consumption running when the broker pauses goes on consuming once the broker answers, or ends with a retriable failure and works when started again', runningCase, 'together', 12_000);
