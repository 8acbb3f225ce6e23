/**
 * A stop (shutdown drain, PATCH restart, pause) that cuts deliveries in hand short: their handlers'
 * signals abort, their outcome is a retry that is neither counted nor committed, and the next member
 * delivers them again from the last commit. That was logged at debug only, so a drain that cut a
 * long webhook call left nothing at the default level (breaker note, 2026-12-06). Now the stopped
 * member says it once, at info: how many, and the first positions. In-memory transport (same
 * delivery semantics as Kafka: transport contract suite).
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { Publisher, RecordPublisher } from '../../../src/bus/publisher/index.js';
import { retry } from '../../../src/bus/subscriber/outcome.js';
import { subscribe } from '../../../src/bus/subscriber/index.js';
import type { Subscription } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { createLogger, silentLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/port.js';
import { PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { codecFixture } from './helpers.js';

const CUT_LINE = /the stop cut (\d+) deliver(?:y|ies) in hand short/;
const policy = retryPolicy({ maxAttempts: 3, initialDelayMs: 0, factor: 1, maxDelayMs: 0, jitter: 0 });

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly subscription?: string;
  readonly records?: number;
  readonly positions?: { topic: string; partition: number; offset: string }[];
}

let transport: Transport | undefined;
const subs: Subscription[] = [];
afterEach(async () => {
  await Promise.allSettled(subs.splice(0).map((s) => s.unsubscribe()));
  await transport?.close();
  transport = undefined;
});

async function setup(): Promise<{ publisher: Publisher; subscribeLogged: (handlerWaitsForStop: boolean) => Promise<{ s: Subscription; started: () => number; lines: () => LogLine[] }> }> {
  const fx = await codecFixture();
  const t = createMemoryTransport();
  transport = t;
  await t.ensureTopics(fx.catalog.topics);
  const records = new RecordPublisher(t, { queueCapacity: 100, maxBatch: 10, retry: policy }, silentLogger());
  const publisher = new Publisher(fx.codec, records, { service: 'pdsp', instance: 'host-1', dataschemaBase: 'http://x/schemas/ids/' });
  const subscribeLogged = async (handlerWaitsForStop: boolean) => {
    const text: string[] = [];
    const out = new PassThrough();
    out.on('data', (c: Buffer) => text.push(c.toString('utf8')));
    let started = 0;
    const s = await subscribe(t, fx.codec, createLogger({ level: 'info', destination: out }), {
      subscription: 'sub-cut',
      kinds: ['PriceLoadingCompleted'],
      retry: policy,
      startFrom: 'earliest',
      ordering: 'none',
      inFlightPerPartition: 8,
      handler: (_e, ctx) => {
        started++;
        if (!handlerWaitsForStop) return Promise.resolve(undefined);
        // A webhook call cut by the stop: the sink answers retry when its signal aborts.
        const signal = ctx.signal!; // always given to a subscriber's handler (optional for handlers called outside one)
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve(retry('request aborted: subscription stopped')), { once: true }));
      },
    });
    subs.push(s);
    const lines = (): LogLine[] => text.join('').split('\n').filter((l) => l.length > 0).map((l) => JSON.parse(l) as LogLine);
    return { s, started: () => started, lines };
  };
  return { publisher, subscribeLogged };
}

describe('a stop that cuts deliveries in hand short', () => {
  it('is logged once at info with the count and their positions; the records come again to the next member', async () => {
    const { publisher, subscribeLogged } = await setup();
    const sent = ['CUT/USD', 'CUT/EUR', 'CUT/JPY'].map((i) => publisher.publish('PriceLoadingCompleted', priceLoaded(i, 'H1'))!);
    await Promise.all(sent.map((p) => p.delivered));

    const first = await subscribeLogged(true);
    // Records of one partition go one after another here (in order), so some may wait behind
    // another partition's: the stop cuts those in hand, whatever their number.
    await waitFor('deliveries in hand', () => first.started() > 0, 5000, 5);
    const inHand = first.started(); // the stop aborts in this same turn: nothing starts in between
    await first.s.unsubscribe();
    await first.s.unsubscribe(); // a second stop says nothing more

    const cut = first.lines().filter((l) => CUT_LINE.test(l.msg));
    expect(cut, JSON.stringify(first.lines())).toHaveLength(1);
    expect(cut[0]!.level).toBe(30); // info
    expect(cut[0]!.subscription).toBe('sub-cut');
    expect(cut[0]!.records).toBe(inHand);
    expect(CUT_LINE.exec(cut[0]!.msg)![1]).toBe(String(inHand));
    expect(cut[0]!.positions).toHaveLength(inHand);
    for (const p of cut[0]!.positions!) {
      expect(p.topic).toBe(PRICE_TOPIC);
      expect(p.offset).toMatch(/^\d+$/);
    }
    // Not a failure of the events: nothing counted as retried or dead-lettered.
    expect(first.s.stats()).toMatchObject({ handled: 0, retried: 0, deadLettered: 0 });

    // Nothing was committed for them: the next member of the group delivers all three.
    const next = await subscribeLogged(false);
    await waitFor('all three delivered by the next member', () => next.s.stats().handled === 3, 5000, 5);
    await next.s.unsubscribe();
    expect(next.lines().filter((l) => CUT_LINE.test(l.msg))).toEqual([]); // a stop that cut nothing says nothing
  });
});
