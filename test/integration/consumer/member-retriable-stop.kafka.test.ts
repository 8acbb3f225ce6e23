/**
 * Fault test: a running @platformatic/kafka member stopped by a failure that waiting cures joins
 * its group again instead of ending. Two real causes, each on the broker of this file's own:
 * - the fetch loop's failure limit: with `retries: 0, maxRestarts: 0` one fetch timing out against
 *   the stopped broker (SIGSTOP) is the limit ((retries + 1) × (maxRestarts + 1));
 * - the library's own rejoin failing: a second member joining makes the first one's heartbeat
 *   answer REBALANCE_IN_PROGRESS, the library rejoins — and the broker is stopped at that JoinGroup
 *   (seen on the library's diagnostics channel `plt:kafka:consumer:group`), so with `retries: 0`
 *   the rejoin fails and the library emits 'error' (it stops heartbeating).
 * Before: either ended the member for good (`done` rejected: "kafka fetch failed" / "kafka
 * consumer could not rejoin its group"), the subscription stopped until a restart. Now the member
 * joins again with backoff (consumption.ts #rejoinLater), logged and counted, and delivers what is
 * written after the broker is back. The kafkajs adapter does the same (start-offsets-stall.kafka.test.ts).
 */
import { tracingChannel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Consumption, TransportLogger, TransportRecord } from '../../../src/transport/index.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { startPrivateBroker } from '../../helpers/private-broker.js';
import type { PrivateBroker } from '../../helpers/private-broker.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';

/** Requests against the stopped broker fail within seconds; the session outlives the stall. */
const BASE = { connectionTimeoutMs: 1_000, requestTimeoutMs: 1_500, initialRetryTimeMs: 100, maxRetryTimeMs: 1_000, sessionTimeoutMs: 10_000, rebalanceTimeoutMs: 10_000, heartbeatIntervalMs: 500 };
const REJOIN = 'kafka consumer stopped on a retriable failure; joining its group again';

const dec = new TextDecoder();

let broker: PrivateBroker;
beforeAll(async () => {
  broker = await startPrivateBroker('member-stop');
}, 120_000);
afterAll(async () => {
  await broker?.stop();
}, 60_000);

const text = (err: unknown): string => (err instanceof Error ? err.message : JSON.stringify(err) ?? 'undefined');

interface Line { readonly level: string; readonly obj: Record<string, unknown>; readonly msg: string }

function recorder(): { readonly lines: Line[]; readonly logger: TransportLogger } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: Record<string, unknown>, msg: string): void => void lines.push({ level, obj, msg });
  return { lines, logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } };
}

/** Writes `text` once the broker answers again (a produce right after SIGCONT may time out: tried again). */
async function produceWhenBack(t: ReturnType<typeof transportOn>, topic: string, text: string): Promise<void> {
  await waitFor(`'${text}' written`, () => t.produce(topic, [{ key: null, value: new TextEncoder().encode(text), headers: [] }]), 30_000, 250);
}

/**
 * After the stall: the member did not end, delivers a record written once the broker answers,
 * logged its first rejoin (counts 1) and joined its group again.
 */
async function expectGoesOn(o: { readonly setup: ReturnType<typeof transportOn>; readonly topic: string; readonly group: string; readonly handled: readonly string[]; readonly lines: readonly Line[]; readonly failure: () => unknown; readonly joins: () => number }): Promise<void> {
  expect(o.failure(), text(o.failure())).toBeUndefined();
  await produceWhenBack(o.setup, o.topic, 'after');
  await waitFor('the record written after the stall', () => {
    if (o.failure() !== undefined) throw new Error(`the consumption failed: ${text(o.failure())}`);
    return o.handled.includes('after');
  }, 60_000);
  // A warn line, at debug while the transport counts the broker as out (logged once: docs/observability.md).
  expect(o.lines.filter((l) => l.msg === REJOIN)[0]).toMatchObject({ obj: { group: o.group, rejoins: 1, rejoinsSinceJoin: 1 } });
  // The fetcher reads the assigned partitions on its own: the record may come before the join does.
  await waitFor('the member joined its group again', () => o.joins() >= 2, 60_000);
  expect(o.failure()).toBeUndefined();
}

describe('a running platformatic member stopped by a retriable failure', () => {
  it('the fetch loop\'s failure limit reached during a broker stall: joins again and delivers', { timeout: 120_000 }, async () => {
    const { lines, logger } = recorder();
    const t = transportOn({ clientId: uniqueName('mstop-fetch'), brokers: broker.brokers, logger, ...BASE, retries: 0, maxRestarts: 0 }, 'platformatic');
    const setup = transportOn({ clientId: uniqueName('mstop-fetch-setup'), brokers: broker.brokers, retries: 2, requestTimeoutMs: 5_000 }, 'platformatic');
    const topic = uniqueName('mstop-fetch');
    const group = uniqueName('mstop-fetch-group');
    const handled: string[] = [];
    const handler = (r: TransportRecord): Promise<void> => {
      handled.push(dec.decode(r.value ?? new Uint8Array()));
      return Promise.resolve();
    };
    let failure: unknown;
    let c: Consumption | undefined;
    try {
      await setup.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      c = await t.consume({ group, topics: [topic], startFrom: 'earliest', commitEveryRecords: 1 }, handler);
      c.done.catch((err: unknown) => (failure = err));
      await produceWhenBack(setup, topic, 'before');
      await waitFor('the record written before', () => handled.includes('before'), 30_000);

      await broker.pause();
      try {
        // The first fetch that times out is the limit: the old member ended here.
        await waitFor('the fetch failure limit reached', () => lines.some((l) => l.msg === 'kafka fetch failed' && Number(l.obj.failures) >= Number(l.obj.limit)), 30_000);
        await waitFor('the member ended or joining again', () => failure !== undefined || lines.some((l) => l.msg === REJOIN), 30_000);
      } finally {
        broker.signal('SIGCONT');
      }
      await expectGoesOn({ setup, topic, group, handled, lines, failure: () => failure, joins: () => c!.joins() });
    } finally {
      broker.signal('SIGCONT');
      await c?.stop();
      await Promise.allSettled([t.close(), setup.close()]);
    }
  });

  it('the library\'s own rejoin failing (broker stopped at it): joins again and delivers', { timeout: 120_000 }, async () => {
    const { lines, logger } = recorder();
    const clientId = uniqueName('mstop-join');
    // A fetch failure limit the short stall does not reach: the rejoin failure is the only cause.
    const t = transportOn({ clientId, brokers: broker.brokers, logger, ...BASE, retries: 0, maxRestarts: 20 }, 'platformatic');
    // The second member waits out the stall (its JoinGroup is held by the broker meanwhile).
    const t2 = transportOn({ clientId: uniqueName('mstop-join-second'), brokers: broker.brokers, ...BASE, requestTimeoutMs: 30_000, retries: 2 }, 'platformatic');
    const setup = transportOn({ clientId: uniqueName('mstop-join-setup'), brokers: broker.brokers, retries: 2, requestTimeoutMs: 5_000 }, 'platformatic');
    const topic = uniqueName('mstop-join');
    const group = uniqueName('mstop-join-group');
    const handled: string[] = [];
    const handler = (r: TransportRecord): Promise<void> => {
      handled.push(dec.decode(r.value ?? new Uint8Array()));
      return Promise.resolve();
    };
    let armed = false;
    let stalled = false;
    const channel = tracingChannel<unknown, { operation?: string; client?: { clientId?: string } }>('plt:kafka:consumer:group');
    const onStart = (ctx: { operation?: string; client?: { clientId?: string } }): void => {
      // The first member's JoinGroup (the fetcher never joins): synchronous, so the request goes to a stopped broker.
      if (!armed || ctx.operation !== 'joinGroup' || ctx.client?.clientId !== `${clientId}-${group}`) return;
      armed = false;
      broker.signal('SIGSTOP');
      stalled = true;
    };
    channel.start.subscribe(onStart as (message: unknown) => void);
    let failure: unknown;
    let c: Consumption | undefined;
    let second: Promise<Consumption> | undefined;
    try {
      await setup.ensureTopics([{ name: topic, partitions: 1, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      c = await t.consume({ group, topics: [topic], startFrom: 'earliest', commitEveryRecords: 1 }, handler);
      c.done.catch((err: unknown) => (failure = err));
      await produceWhenBack(setup, topic, 'before');
      await waitFor('the record written before', () => handled.includes('before'), 30_000);

      armed = true;
      // Its join starts a rebalance: the first member's next heartbeat answers REBALANCE_IN_PROGRESS.
      second = t2.consume({ group, topics: [topic], startFrom: 'earliest', commitEveryRecords: 1 }, handler);
      second.catch(() => undefined);
      try {
        await waitFor('the broker stopped at the first member\'s rejoin', () => stalled, 30_000);
        await waitFor('the library\'s rejoin failed', () => lines.some((l) => l.msg === 'kafka consumer could not rejoin its group'), 30_000);
        await waitFor('the member ended or joining again', () => failure !== undefined || lines.some((l) => l.msg === REJOIN), 30_000);
      } finally {
        broker.signal('SIGCONT');
      }
      await expectGoesOn({ setup, topic, group, handled, lines, failure: () => failure, joins: () => c!.joins() });
    } finally {
      armed = false;
      broker.signal('SIGCONT');
      channel.start.unsubscribe(onStart as (message: unknown) => void);
      await c?.stop();
      await second?.then((s) => s.stop(), () => undefined);
      await Promise.allSettled([t.close(), t2.close(), setup.close()]);
    }
  });
});
