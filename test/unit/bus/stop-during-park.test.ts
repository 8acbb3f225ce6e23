/**
 * A stop (shutdown, PATCH restart) while a failed delivery is being parked on the retry topic
 * (ordering none, issue 8): the park's produce was already sent. The stop aborted it, the handler
 * gave up, and the record stayed uncommitted although its retry had landed, so the next member
 * delivered the event at once as a first attempt AND later from the retry topic (the official CI
 * saw the retry arrive 335 ms after the first attempt instead of after its 1.5 s backoff). Now a
 * produce in flight is awaited (bounded by the member's stop deadline): the record is committed and
 * only its parked retry comes again. Scripted transport over the in-memory one (same semantics as
 * Kafka: transport contract suite; an aborted produce fails as Kafka's adapters fail it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Publisher, RecordPublisher } from '../../../src/bus/publisher/index.js';
import { retry } from '../../../src/bus/subscriber/outcome.js';
import { subscribe } from '../../../src/bus/subscriber/index.js';
import type { Subscription } from '../../../src/bus/subscriber/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { silentLogger } from '../../../src/observability/index.js';
import { PRICE_TOPIC, priceLoaded } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';
import { codecFixture, ScriptedTransport } from './helpers.js';

const PARK_MS = 60_000;
const policy = retryPolicy({ maxAttempts: 3, initialDelayMs: PARK_MS, factor: 1, maxDelayMs: PARK_MS, jitter: 0 });
const SUBSCRIPTION = 'sub-park-stop';

let transport: ScriptedTransport | undefined;
const subs: Subscription[] = [];
afterEach(async () => {
  await Promise.allSettled(subs.splice(0).map((s) => s.unsubscribe()));
  await transport?.close();
  transport = undefined;
});

describe('a stop while a failed delivery is being parked on the retry topic', () => {
  it('waits for the park in flight and commits the record: the next member gets only the parked retry, not the event again', async () => {
    const fx = await codecFixture();
    const t = (transport = new ScriptedTransport());
    await t.ensureTopics(fx.catalog.topics);
    const publisher = new Publisher(fx.codec, new RecordPublisher(t, { queueCapacity: 10, maxBatch: 10, retry: policy }, silentLogger()), { service: 'pdsp', instance: 'host-1', dataschemaBase: 'http://x/schemas/ids/' });
    await publisher.publish('PriceLoadingCompleted', priceLoaded('PARK/USD', 'H1'))!.delivered;

    // The park's produce is held in flight until released.
    let release!: () => void;
    t.steps.push({ wait: new Promise<void>((r) => (release = r)) });
    let attempts = 0;
    const options = {
      subscription: SUBSCRIPTION,
      kinds: ['PriceLoadingCompleted'],
      retry: policy,
      startFrom: 'earliest' as const,
      ordering: 'none' as const,
      handler: () => {
        attempts++;
        return Promise.resolve(retry('sink answered 500'));
      },
    };
    const first = await subscribe(t, fx.codec, silentLogger(), options);
    subs.push(first);
    await waitFor('the park sent to the retry topic', () => t.calls.some((c) => c.topic === `${SUBSCRIPTION}.retry`), 5000, 5);
    const stopped = first.unsubscribe(); // aborts the handler's signal in this turn
    release();
    await stopped;

    expect(attempts).toBe(1);
    const parked = await t.endOffsets(`${SUBSCRIPTION}.retry`);
    expect(parked.reduce((n, p) => n + p.offset, 0n)).toBe(1n);
    // The record was committed past: its retry carries it on.
    expect((await t.committedOffsets(SUBSCRIPTION, PRICE_TOPIC)).find((c) => c.offset !== undefined)?.offset).toBe(1n);

    // The next member of the group does not deliver the event again (the retry is due in a minute).
    const next = await subscribe(t, fx.codec, silentLogger(), options);
    subs.push(next);
    await new Promise((r) => setTimeout(r, 300));
    expect(attempts).toBe(1);
  });
});
