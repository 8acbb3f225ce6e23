/**
 * Fault test of the outbox (bus spec P3, S3): a broker of this test's own (never the shared one)
 * is killed with SIGKILL in the middle of a stream of outbox publishes and restarted on the same
 * data directory. The relay's failure counter shows it was hit mid-stream; afterwards the set of
 * committed outbox rows equals the set of event ids on the topic (duplicates allowed, counted),
 * per-key order holds (first occurrences in sequence), and a consumer that was running throughout
 * resumes by itself and sees every event.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOutboxRelay } from '../../src/bus/outbox/index.js';
import type { OutboxRelay } from '../../src/bus/outbox/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import type { Consumption } from '../../src/transport/index.js';
import { KIND, outboxFixture, readTopic, seriesUpdate } from './outbox/fixture.js';
import type { OutboxFixture } from './outbox/fixture.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { waitFor } from '../helpers/wait.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let broker: PrivateBroker;

beforeAll(async () => {
  broker = await startPrivateBroker('outbox-fault');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

/**
 * Steps that the tests running at once take together: {@link at} resolves once every test still
 * taking part has arrived at the step, the last one to arrive running its action (once). A test
 * that fails {@link leave}s, so that the others do not wait for it.
 */
class Rendezvous {
  #parties: number;
  readonly #steps = new Map<string, { arrived: number; started: boolean; action: () => Promise<void>; done: Promise<void>; settle: (p: Promise<void>) => void }>();

  constructor(parties: number) {
    this.#parties = parties;
  }

  /** Arrives at `step`; resolves when its action (the first arrival's) has run; rejects as the action does. */
  at(step: string, action: () => Promise<void>): Promise<void> {
    let s = this.#steps.get(step);
    if (s === undefined) {
      let settle!: (p: Promise<void>) => void;
      const done = new Promise<void>((resolve) => (settle = resolve));
      s = { arrived: 0, started: false, action, done, settle };
      this.#steps.set(step, s);
    }
    s.arrived++;
    this.#run();
    return s.done;
  }

  /** Takes no further part: the steps wait for one test fewer. */
  leave(): void {
    this.#parties--;
    this.#run();
  }

  #run(): void {
    for (const s of this.#steps.values()) {
      if (s.started || s.arrived < this.#parties) continue;
      s.started = true;
      s.settle(s.action());
    }
  }
}

// Both clients at once, each with its own fixture (topic, table, groups), relay and consumer, on
// the same broker, killed once mid-stream of both and restarted once: the streams start together,
// the broker is killed when both relays are into them, and restarted when both have counted a
// failure. Was one client after the other, each with a crash of its own (CI 26 s + 19 s).
const crash = new Rendezvous(KAFKA_CLIENTS.length);

describe.concurrent.each(KAFKA_CLIENTS)('outbox under a broker crash (client %s)', (client) => {
  let f: OutboxFixture | undefined;
  let relay: OutboxRelay | undefined;
  let live: Consumption | undefined;
  afterAll(async () => {
    await relay?.stop();
    await live?.stop().catch(() => undefined);
    await f?.close();
  }, 60_000);

  it('SIGKILL of the broker mid-stream: committed rows = records on the topic (duplicates counted), per-key order holds, a running consumer resumes', async () => {
    try {
      await crashTest();
    } catch (err) {
      crash.leave();
      throw err;
    }
  }, 150_000);

  async function crashTest(): Promise<void> {
    const started = Date.now();
    f = await outboxFixture({
      client,
      partitions: 3,
      kafka: { brokers: [...broker.brokers], retries: 2, initialRetryTimeMs: 100, maxRetryTimeMs: 1000, connectionTimeoutMs: 1000, requestTimeoutMs: 5000, maxRestarts: 1000, sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 },
    });
    const fx = f;

    // A consumer running before, during and after the crash.
    const liveIds = new Set<string>();
    live = await fx.transport.consume({ group: `${fx.run}-live-${randomUUID()}`, topics: [fx.topic], startFrom: 'earliest' }, async (record) => {
      liveIds.add((await fx.codec.fromRecord(record)).attributes.id);
    });

    relay = await startOutboxRelay({
      pool: fx.pool,
      transport: fx.transport,
      table: fx.table,
      batchSize: 20,
      pollIntervalMs: 100,
      publishTimeoutMs: 8000,
      retry: retryPolicy({ maxAttempts: Number.MAX_SAFE_INTEGER, initialDelayMs: 100, factor: 2, maxDelayMs: 1000, jitter: 0.2 }),
    });
    const r = relay;

    // The stream: 8 keys, 60 events each, one transaction per event, ~40 ms apart per key; started
    // when the other client's relay and consumer run too.
    await crash.at('stream', () => Promise.resolve());
    const keys = Array.from({ length: 8 }, (_, i) => `F${i}/USD`);
    const perKey = 60;
    let written = 0;
    const stream = Promise.all(
      keys.map(async (k) => {
        for (let seq = 1; seq <= perKey; seq++) {
          const c = await fx.pool.connect();
          try {
            await c.query('BEGIN');
            await fx.writer.write(c, KIND, seriesUpdate(k, seq));
            await c.query('COMMIT');
            written++;
          } finally {
            c.release();
          }
          await sleep(40);
        }
      }),
    );

    // Kill the broker once the relay is well into the stream.
    await waitFor('the relay to publish 80 events', () => r.stats().published >= 80, 30_000, 10);
    await crash.at('kill', () => Promise.resolve(broker.signal('SIGKILL')));
    const atKill = { written, published: r.stats().published, failed: r.stats().failedAttempts };
    await waitFor('the relay to count a failure', () => r.stats().failedAttempts > atKill.failed, 30_000);
    const hit = r.stats();
    expect(hit.failedAttempts).toBeGreaterThan(atKill.failed);
    expect(atKill.written).toBeLessThan(keys.length * perKey); // it was hit mid-stream
    expect(atKill.published).toBeLessThan(keys.length * perKey);

    await crash.at('restart', async () => {
      await sleep(1500); // rows keep accumulating while the broker is down
      await broker.restart(); // same data directory, same ports
    });
    await stream;
    const total = keys.length * perKey;
    expect(written).toBe(total);

    await waitFor('every outbox row to be sent', async () => Number((await fx.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${fx.writer.table.sql} WHERE sent_at IS NULL`)).rows[0]!.n) === 0, 45_000, 200).catch((err: Error) => {
      // Say why the relay is stuck: its counters and last error.
      throw new Error(`${err.message}; relay stats: ${JSON.stringify(r.stats())}`);
    });
    const committed = (await fx.pool.query<{ event_id: string }>(`SELECT event_id FROM ${fx.writer.table.sql}`)).rows.map((x) => x.event_id);
    expect(committed).toHaveLength(total);

    const seen = await readTopic(fx, fx.topic, total, 30_000);
    const ids = new Set(seen.map((s) => s.id));
    expect(ids).toEqual(new Set(committed)); // none lost, nothing foreign
    const duplicates = seen.length - ids.size;
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(duplicates).toBeLessThanOrEqual(r.stats().failedRows); // bounded by the rows of failed attempts
    // Per key: the first occurrences come in sequence 1…60 (a duplicate re-sends a prefix of a batch).
    const firsts = new Map<string, number[]>();
    const dedup = new Set<string>();
    for (const s of seen) {
      if (dedup.has(s.id)) continue;
      dedup.add(s.id);
      firsts.set(s.key, [...(firsts.get(s.key) ?? []), s.seq]);
    }
    expect(firsts.size).toBe(keys.length);
    for (const [, seqs] of firsts) expect(seqs).toEqual(Array.from({ length: perKey }, (_, i) => i + 1));

    // The consumer that was running throughout resumed by itself.
    await waitFor('the running consumer to see every event', () => liveIds.size === total, 30_000);
    expect(liveIds).toEqual(new Set(committed));

    console.info(`outbox fault test (${client}): killed at written=${atKill.written} published=${atKill.published}; failedAttempts=${r.stats().failedAttempts} failedRows=${r.stats().failedRows}; duplicates on the topic=${duplicates}; ${Date.now() - started} ms`);
  }
});
