/**
 * Fault test: the broker stalls (SIGSTOP: its sockets stay open, every request times out) just
 * when a running member takes up new partitions and looks up where they start (their committed
 * offsets, their log start). Partitions are added to the topic; the member sees them at its
 * metadata refresh and joins again; the broker is stopped at that moment and resumed after longer
 * than a look-up takes to fail.
 * Before: on @platformatic/kafka the failed look-up failed the whole consumption at once (`done`
 * rejected with "Request timed out", nothing delivered any more), although the fetch loop beside it
 * retries such failures (a one-off flake of added-partitions.kafka.test.ts "a running member" under
 * load was this). Now the look-up is tried again with the fetch loop's backoff and limit: the member
 * goes on and delivers a record written on an added partition.
 * The moment the look-up starts is seen through the client itself: @platformatic/kafka's
 * diagnostics channel `plt:kafka:consumer:offsets` publishes its `start` synchronously before the
 * request is sent; on kafkajs, the member's join line (its GROUP_JOIN, after which the commits of
 * the added partitions are looked up, consumption.ts #pinLaterJoin).
 * kafkajs before: the same stall ended its member in 1 of 3 runs — kafkajs gives up finding the
 * group coordinator of a stalled broker with a "non-retriable" error ("Failed to find group
 * coordinator") and never restarted it, so `done` rejected. Now a member that ran joins again with
 * backoff while the cause is retriable (consumption.ts #rejoinLater).
 * On a broker of this file's own.
 */
import { tracingChannel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import type { TransportRecord } from '../../src/transport/index.js';
import { kafkajs } from '../../src/transport/kafka/kafkajs.js';
import type { TransportLogger } from '../../src/transport/kafka/logging.js';
import { transportOn } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

/** Request timeout and retries short, so a look-up against the stopped broker fails within seconds; a metadata refresh every second; room for the fetch retries during the stall. */
const TIMEOUTS = { connectionTimeoutMs: 1_000, requestTimeoutMs: 1_500, retries: 1, initialRetryTimeMs: 100, maxRetryTimeMs: 500, maxRestarts: 5, metadataMaxAgeMs: 1_000 };
/**
 * Longer than a look-up takes to fail against the stopped broker (its request timeout, 1.5 s), well
 * short of the session timeout (30 s). Longer on kafkajs: its own restarts (each a few seconds
 * against the stopped broker) then run into the stall until it gives up finding the coordinator
 * (at 8 s that happened in 1 of 3 runs, 2026-12-07).
 * On platformatic that is the most a stall lasts: it ends as soon as the look-up has failed against
 * the stopped broker and is tried again (the line asserted below), mostly within a few seconds
 * (the whole 8 s slept through before). kafkajs's give-up comes late in the stall (at ~13 s when it
 * comes), so its stall stays as long as it was.
 */
const STALL_MS = { platformatic: 8_000, kafkajs: 15_000 } as const;
/** The look-up of the added partitions failed against the stopped broker and is tried again (platformatic). */
const LOOKUP_RETRIED = 'could not look up where newly assigned partitions start; trying again';

let broker: PrivateBroker;
beforeAll(async () => {
  broker = await startPrivateBroker('startstall');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

const dec = new TextDecoder();

describe.each(KAFKA_CLIENTS)('a broker stalled while a running member takes up added partitions (client %s)', (client) => {
  it('the member goes on after the stall and delivers a record written on an added partition', { timeout: 120_000 }, async () => {
    const topic = uniqueName(`startstall-${client}`);
    const group = uniqueName(`startstall-group-${client}`);
    /** Every line of the transport's log (a warning during an outage goes to debug: logged once, issue 15). */
    const lines: string[] = [];
    /** Set to stop the broker at the next start offset look-up of `group`; cleared once stopped. */
    let armed = false;
    let stalledAt: number | undefined;
    const stall = (): void => {
      if (!armed) return;
      armed = false;
      broker.signal('SIGSTOP'); // synchronous: the look-up's request goes to a stopped broker
      stalledAt = Date.now();
    };
    const logger: TransportLogger = {
      debug: (_obj, msg) => {
        lines.push(msg);
        // kafkajs: the member joined again with the added partitions; their look-up follows at once.
        if (client === 'kafkajs' && msg === 'consumer joined its group') stall();
      },
      info: (_obj, msg) => void lines.push(msg),
      warn: (_obj, msg) => void lines.push(msg),
      error: (_obj, msg) => void lines.push(msg),
    };
    const offsets = tracingChannel<unknown, { operation?: string; client?: { groupId?: string } }>('plt:kafka:consumer:offsets');
    const onStart = (ctx: { operation?: string; client?: { groupId?: string } }): void => {
      if (ctx.operation === 'listCommittedOffsets' && ctx.client?.groupId === group) stall();
    };
    offsets.start.subscribe(onStart as (message: unknown) => void);
    const t = transportOn({ clientId: `startstall-${client}`, brokers: broker.brokers, logger, ...TIMEOUTS }, client);
    const { Kafka, logLevel } = kafkajs();
    const admin = new Kafka({ clientId: 'startstall-admin', brokers: [...broker.brokers], logLevel: logLevel.NOTHING }).admin();
    let failure: unknown;
    let joins = 0;
    try {
      await t.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      const handled: string[] = [];
      const handler = (r: TransportRecord): Promise<void> => {
        handled.push(`${r.partition}:${dec.decode(r.value ?? new Uint8Array())}`);
        return Promise.resolve();
      };
      // Once: a coordinator still loading on this broker is waited for by the transport (coordinator-wait.ts).
      const c = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
      c.done.catch((err: unknown) => (failure = err));
      try {
        await t.produce(topic, [{ key: null, value: new TextEncoder().encode('before'), headers: [], partition: 0 }]);
        await waitFor('the record written before', () => handled.includes('0:before'), 30_000);

        armed = true;
        await admin.connect();
        await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
        await waitFor('the broker stopped at the look-up of the added partitions', () => stalledAt !== undefined, 30_000);
        try {
          // platformatic: until the look-up failed and is tried again, at most STALL_MS (a look-up
          // that is never tried again is stalled as long as before, and the checks below fail).
          if (client === 'platformatic') await waitFor('the look-up to fail and be tried again', () => lines.includes(LOOKUP_RETRIED), STALL_MS[client], 100).catch(() => undefined);
          else await new Promise((r) => setTimeout(r, STALL_MS[client]));
        } finally {
          broker.signal('SIGCONT');
        }

        // The broker may take a moment to answer again after SIGCONT: a produce that times out is tried again.
        await waitFor('the record on the added partition written', () => t.produce(topic, [{ key: null, value: new TextEncoder().encode('on an added partition'), headers: [], partition: 3 }]), 30_000, 250);
        const logTail = (): string => lines.filter((l) => !l.startsWith('Resuming') && !l.startsWith('Pausing') && !l.startsWith('Response ') && !l.startsWith('Request ')).slice(-60).join(' | ');
        await waitFor('the record on the added partition', () => {
          if (failure !== undefined) throw new Error(`the consumption failed: ${failure instanceof Error ? failure.message : JSON.stringify(failure)}; log: ${logTail()}`);
          return handled.includes('3:on an added partition');
        }, 60_000).catch((err: unknown) => {
          throw new Error(`${err instanceof Error ? err.message : String(err)}; handled: ${handled.join(', ')}; assignment: ${c.assignments().map((a) => a.partition).join(',')}; log: ${logTail()}`);
        });
        expect(failure).toBeUndefined();
        expect(c.assignments().map((a) => a.partition)).toEqual([0, 1, 2, 3]);
        joins = c.joins();
        expect(handled.filter((h) => h === '0:before')).toHaveLength(1);
      } finally {
        await c.stop();
      }
      expect(failure).toBeUndefined();
      // The look-up failed against the stopped broker and was tried again (on kafkajs the member
      // may also have been stopped by kafkajs and joined again: #rejoinLater, not in every run).
      if (client === 'platformatic') expect(lines).toContain(LOOKUP_RETRIED);
      else expect(joins).toBeGreaterThanOrEqual(2); // joined again with the added partitions
    } finally {
      armed = false;
      broker.signal('SIGCONT');
      offsets.start.unsubscribe(onStart as (message: unknown) => void);
      await Promise.allSettled([t.close(), admin.disconnect()]);
    }
  });
});
