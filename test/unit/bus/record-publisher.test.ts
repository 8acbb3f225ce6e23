import { afterEach, describe, expect, it } from 'vitest';
import { BATCH_HEADER_BYTES, RecordPublisher, deliveryFate, recordBatchBytes } from '../../../src/bus/publisher/index.js';
import type { RecordPublisherOptions } from '../../../src/bus/publisher/index.js';
import { GatewayError } from '../../../src/core/errors.js';
import { retryPolicy } from '../../../src/core/retry.js';
import { silentLogger } from '../../../src/observability/index.js';
import type { Position } from '../../../src/transport/port.js';
import { ScriptedTransport, brokerDown, gate, rec, text, tick, tooLarge, topic } from './helpers.js';
import { caught, caughtAsync } from '../../helpers/errors.js';

const fastRetry = (maxAttempts = 3, initialDelayMs = 1) => retryPolicy({ maxAttempts, initialDelayMs, factor: 2, maxDelayMs: Math.max(10_000, initialDelayMs), jitter: 0 });

const open: RecordPublisher[] = [];
async function setup(opts: Partial<RecordPublisherOptions> = {}) {
  const t = new ScriptedTransport();
  await t.ensureTopics([topic('a'), topic('b'), topic('keyed', 4)]);
  const p = new RecordPublisher(t, { queueCapacity: 100, maxBatch: 10, retry: fastRetry(), ...opts }, silentLogger());
  open.push(p);
  return { t, p };
}

async function valuesOf(t: ScriptedTransport, name: string): Promise<(string | null)[]> {
  const out: (string | null)[] = [];
  const consumed = new Promise<void>((resolve) => {
    void t.inner.endOffsets(name).then(async (ends) => {
      const total = ends.reduce((n, e) => n + Number(e.offset), 0);
      if (total === 0) return resolve();
      const c = await t.inner.consume({ group: `read-${name}-${Math.random()}`, topics: [name], startFrom: 'earliest' }, (r) => {
        out.push(text(r.value));
        if (out.length === total) resolve();
        return Promise.resolve();
      });
      await consumed;
      await c.stop();
    });
  });
  await consumed;
  return out;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((p) => p.close()));
});

describe('RecordPublisher: sending', () => {
  it('resolves one position per record, in input order, after the transport stored them', async () => {
    const { t, p } = await setup();
    const positions = await Promise.all(p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }, { topic: 'a', record: rec('3') }]));
    expect(positions).toEqual([
      { topic: 'a', partition: 0, offset: 0n },
      { topic: 'a', partition: 0, offset: 1n },
      { topic: 'a', partition: 0, offset: 2n },
    ]);
    expect(await valuesOf(t, 'a')).toEqual(['1', '2', '3']);
    expect(t.calls).toHaveLength(1);
    expect(p.stats()).toEqual({ enqueued: 3, published: 3, failed: 0, rejected: 0, retried: 0, queued: 0 });
  });

  it('an empty send returns no promises and produces nothing', async () => {
    const { t, p } = await setup();
    expect(p.send([])).toEqual([]);
    await tick();
    expect(t.calls).toHaveLength(0);
    expect(p.stats().enqueued).toBe(0);
  });

  it('splits a large send into produce calls of at most maxBatch records, keeping order', async () => {
    const { t, p } = await setup({ maxBatch: 2 });
    const positions = await Promise.all(p.send(['1', '2', '3', '4', '5'].map((v) => ({ topic: 'a', record: rec(v) }))));
    expect(t.calls.map((c) => c.records.length)).toEqual([2, 2, 1]);
    expect(positions.map((x) => x.offset)).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(await valuesOf(t, 'a')).toEqual(['1', '2', '3', '4', '5']);
  });

  it('groups what is queued by topic: one produce per topic per batch, queue order kept within each', async () => {
    const { t, p } = await setup();
    const g = gate();
    t.steps.push({ wait: g.promise });
    const first = p.send([{ topic: 'a', record: rec('a1') }]);
    // While a1 is in flight, queue a mix of topics.
    const rest = p.send([
      { topic: 'a', record: rec('a2') },
      { topic: 'b', record: rec('b1') },
      { topic: 'a', record: rec('a3') },
      { topic: 'b', record: rec('b2') },
    ]);
    expect(p.stats().queued).toBe(4);
    g.release();
    await Promise.all([...first, ...rest]);
    expect(t.calls.map((c) => [c.topic, c.records.map((r) => text(r.value))])).toEqual([
      ['a', ['a1']],
      ['a', ['a2', 'a3']],
      ['b', ['b1', 'b2']],
    ]);
    expect(await valuesOf(t, 'a')).toEqual(['a1', 'a2', 'a3']);
    expect(await valuesOf(t, 'b')).toEqual(['b1', 'b2']);
  });

  it('records with one key keep their order on their partition', async () => {
    const { p } = await setup({ maxBatch: 3 });
    const positions = await Promise.all(p.send(Array.from({ length: 10 }, (_, i) => ({ topic: 'keyed', record: rec(String(i), 'EUR-USD_H4') }))));
    expect(new Set(positions.map((x) => x.partition)).size).toBe(1);
    expect(positions.map((x) => x.offset)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
  });
});

describe('RecordPublisher: bounded queue', () => {
  it('refuses at once with CEG_QUEUE_FULL (retriable, details.capacity) and counts the refused records', async () => {
    const { t, p } = await setup({ queueCapacity: 2, maxBatch: 1 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const inFlight = p.send([{ topic: 'a', record: rec('0') }]); // taken off the queue at once
    const queued = p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }]);
    expect(p.stats().queued).toBe(2);
    const err = caught(() => p.send([{ topic: 'a', record: rec('3') }]));
    expect(err.code).toBe('CEG_QUEUE_FULL');
    expect(err.retriable).toBe(true);
    expect(err.details).toEqual({ capacity: 2, fate: 'notStored' });
    expect(p.stats()).toMatchObject({ enqueued: 3, rejected: 1, queued: 2 });
    g.release();
    await Promise.all([...inFlight, ...queued]);
    expect(p.stats()).toMatchObject({ published: 3, rejected: 1, queued: 0 });
  });

  it('admits a batch whole or not at all', async () => {
    const { t, p } = await setup({ queueCapacity: 3, maxBatch: 1 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const held = p.send([{ topic: 'a', record: rec('x') }]);
    const one = p.send([{ topic: 'a', record: rec('y') }]);
    const err = caught(() => p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }, { topic: 'a', record: rec('3') }]));
    expect(err.code).toBe('CEG_QUEUE_FULL');
    expect(p.stats()).toMatchObject({ enqueued: 2, rejected: 3, queued: 1 });
    g.release();
    await Promise.all([...held, ...one]);
    expect(await valuesOf(t, 'a')).toEqual(['x', 'y']);
  });

  it('refuses options that cannot work (CEG_INVALID_OPTIONS)', () => {
    const t = new ScriptedTransport();
    const make = (o: Partial<RecordPublisherOptions>) => () => new RecordPublisher(t, { queueCapacity: 10, maxBatch: 10, retry: fastRetry(), ...o }, silentLogger());
    expect(make({ maxBatch: 0 })).toThrow(expect.objectContaining({ code: 'CEG_INVALID_OPTIONS' }) as Error);
    expect(make({ queueCapacity: 0 })).toThrow(expect.objectContaining({ code: 'CEG_INVALID_OPTIONS' }) as Error);
    expect(make({ queueCapacity: 1.5 })).toThrow(expect.objectContaining({ code: 'CEG_INVALID_OPTIONS' }) as Error);
  });
});

describe('RecordPublisher: failures', () => {
  it('retries retriable failures with backoff and then delivers; counts retries per record', async () => {
    const { t, p } = await setup({ retry: fastRetry(5) });
    t.steps.push({ fail: brokerDown() }, { fail: brokerDown() });
    const positions = await Promise.all(p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }]));
    expect(positions.map((x) => x.offset)).toEqual([0n, 1n]);
    expect(t.calls).toHaveLength(3);
    expect(p.stats()).toEqual({ enqueued: 2, published: 2, failed: 0, rejected: 0, retried: 4, queued: 0 });
    expect(await valuesOf(t, 'a')).toEqual(['1', '2']);
  });

  it('fails every record of the group with the transport error once maxAttempts is used up', async () => {
    const { t, p } = await setup({ retry: fastRetry(3) });
    t.alwaysFail.set('a', brokerDown());
    const pending = p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }]);
    const errs = await Promise.all(pending.map(caughtAsync));
    expect(errs.map((e) => e.code)).toEqual(['CEG_BROKER_UNAVAILABLE', 'CEG_BROKER_UNAVAILABLE']);
    expect(t.calls).toHaveLength(3);
    expect(p.stats()).toMatchObject({ enqueued: 2, published: 0, failed: 2, retried: 4 });
  });

  it('does not retry a non-retriable failure', async () => {
    const { t, p } = await setup({ retry: fastRetry(5) });
    t.steps.push({ fail: tooLarge() });
    const [pending] = p.send([{ topic: 'a', record: rec('1') }]);
    const err = await caughtAsync(pending!);
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(t.calls).toHaveLength(1);
    expect(p.stats()).toMatchObject({ failed: 1, retried: 0, published: 0 });
  });

  it('splits a batch the broker refuses for good in halves, so only the refused record fails (notStored) and the others are stored in order', async () => {
    const { t, p } = await setup({ retry: fastRetry(5) });
    // Call 1: the batch of 3 is refused; its halves [1, huge] (refused) and [3]; [1, huge] in halves [1] and [huge] (refused).
    t.steps.push({ fail: tooLarge() }, { fail: tooLarge() }, { wait: Promise.resolve() }, { fail: tooLarge() });
    const [ok1, bad, ok2] = p.send([
      { topic: 'a', record: rec('1', 'k') },
      { topic: 'a', record: rec('huge', 'k') },
      { topic: 'a', record: rec('3', 'k') },
    ]);
    const [p1, p3] = await Promise.all([ok1!, ok2!]);
    const refused = await caughtAsync(bad!);
    expect(refused.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(deliveryFate(refused)).toBe('notStored'); // a too-large refusal appends nothing
    expect(t.calls.map((c) => c.records.length)).toEqual([3, 2, 1, 1, 1]);
    expect(p3.offset).toBe(p1.offset + 1n);
    expect(await valuesOf(t, 'a')).toEqual(['1', '3']);
    expect(p.stats()).toMatchObject({ published: 2, failed: 1 });
  });

  it('wraps a non-GatewayError from the transport as retriable CEG_BROKER_UNAVAILABLE naming the topic', async () => {
    const { t, p } = await setup({ retry: fastRetry(2) });
    t.alwaysFail.set('a', new Error('socket hang up'));
    const err = await caughtAsync(p.send([{ topic: 'a', record: rec('1') }])[0]!);
    expect(err.code).toBe('CEG_BROKER_UNAVAILABLE');
    expect(err.retriable).toBe(true);
    expect(err.message).toBe('socket hang up');
    expect(err.details).toEqual({ topic: 'a', fate: 'unconfirmed' }); // a socket failure mid-send may have written it
    expect(t.calls).toHaveLength(2);
  });

  it('a failing topic does not fail the records of another topic in the same batch', async () => {
    const { t, p } = await setup({ retry: fastRetry(2) });
    t.alwaysFail.set('a', brokerDown());
    const [a, b] = p.send([{ topic: 'a', record: rec('a1') }, { topic: 'b', record: rec('b1') }]);
    const [ra, rb] = await Promise.allSettled([a!, b!]);
    expect(ra.status).toBe('rejected');
    expect((rb as PromiseFulfilledResult<Position>).value).toEqual({ topic: 'b', partition: 0, offset: 0n });
    expect(p.stats()).toMatchObject({ published: 1, failed: 1 });
  });

  it('records queued behind a retrying batch wait for it (order kept across retries)', async () => {
    const { t, p } = await setup({ retry: fastRetry(5, 30) });
    t.steps.push({ fail: brokerDown() });
    const first = p.send([{ topic: 'a', record: rec('first') }]);
    await tick(5); // first failed once and is in its backoff
    const second = p.send([{ topic: 'a', record: rec('second') }]);
    const [p1, p2] = await Promise.all([...first, ...second]);
    expect(p1!.offset).toBe(0n);
    expect(p2!.offset).toBe(1n);
    expect(await valuesOf(t, 'a')).toEqual(['first', 'second']);
  });
});

describe('RecordPublisher: close', () => {
  it('refuses sends after close with CEG_CLOSED (not retriable)', async () => {
    const { p } = await setup();
    await p.close();
    const err = caught(() => p.send([{ topic: 'a', record: rec('1') }]));
    expect(err.code).toBe('CEG_CLOSED');
    expect(err.retriable).toBe(false);
  });

  it('lets the batch in flight finish and fails what is still queued with CEG_CLOSED', async () => {
    const { t, p } = await setup({ maxBatch: 1 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const pending = p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }, { topic: 'a', record: rec('3') }]);
    const closed = p.close();
    g.release();
    await closed;
    const results = await Promise.allSettled(pending);
    expect(results[0]).toEqual({ status: 'fulfilled', value: { topic: 'a', partition: 0, offset: 0n } });
    expect(results.slice(1).map((r) => r.status === 'rejected' && (r.reason as GatewayError).code)).toEqual(['CEG_CLOSED', 'CEG_CLOSED']);
    expect(t.calls).toHaveLength(1);
    expect(p.stats()).toMatchObject({ enqueued: 3, published: 1, failed: 2, queued: 0 });
  });

  it('cuts a retry backoff short: the record fails with its transport error and close returns promptly', async () => {
    const { t, p } = await setup({ retry: fastRetry(10, 60_000) });
    t.alwaysFail.set('a', brokerDown());
    const [pending] = p.send([{ topic: 'a', record: rec('1') }]);
    await tick(5);
    const t0 = performance.now();
    await p.close();
    expect(performance.now() - t0).toBeLessThan(10_000); // not the 60 s backoff (room for a loaded machine)
    const err = await caughtAsync(pending!);
    expect(err.code).toBe('CEG_BROKER_UNAVAILABLE');
    expect(p.stats()).toMatchObject({ failed: 1, published: 0 });
  });

  it('close is idempotent', async () => {
    const { p } = await setup();
    await Promise.all(p.send([{ topic: 'a', record: rec('1') }]));
    await p.close();
    await p.close();
    expect(p.stats()).toMatchObject({ published: 1, failed: 0 });
  });
});

describe('RecordPublisher: issue 12 (bytes, deadlines, what is known of a failure)', () => {
  it('cuts produce calls by the topic’s max.message.bytes, keeping order', async () => {
    const value = 'v'.repeat(1000);
    const one = recordBatchBytes(rec(value));
    const { t, p } = await setup({ maxBatch: 100, maxMessageBytes: (name) => (name === 'a' ? BATCH_HEADER_BYTES + 3 * one : undefined) });
    const positions = await Promise.all(p.send(Array.from({ length: 10 }, () => ({ topic: 'a', record: rec(value) }))));
    expect(t.calls.map((c) => c.records.length)).toEqual([3, 3, 3, 1]);
    expect(positions.map((x) => x.offset)).toEqual(Array.from({ length: 10 }, (_, i) => BigInt(i)));
  });

  it('records still queued when the caller’s deadline passes are withdrawn: rejected as notStored and never produced', async () => {
    const { t, p } = await setup({ maxBatch: 1 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const inFlight = p.send([{ topic: 'a', record: rec('first') }]);
    const deadline = new AbortController();
    const queued = p.send([{ topic: 'a', record: rec('second') }], deadline.signal);
    await tick(5);
    deadline.abort();
    const err = await caughtAsync(queued[0]!);
    expect(deliveryFate(err)).toBe('notStored');
    g.release();
    await Promise.all(inFlight);
    await tick(5);
    expect(t.calls.map((c) => c.records.length)).toEqual([1]);
    expect(await valuesOf(t, 'a')).toEqual(['first']);
  });

  it('a record whose attempt failed mid-flight is unconfirmed when it fails for good (it may be stored)', async () => {
    const { t, p } = await setup({ retry: fastRetry(2) });
    t.steps.push({ fail: new GatewayError('CEG_DELIVERY_TIMEOUT', 'request timed out', { retriable: true }) }, { fail: tooLarge() });
    const err = await caughtAsync(p.send([{ topic: 'a', record: rec('1') }])[0]!);
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(deliveryFate(err)).toBe('unconfirmed');
  });

  it('a record the broker refuses as too large names the topic’s limit', async () => {
    const { t, p } = await setup({ maxMessageBytes: () => 1_000_000 });
    t.steps.push({ fail: tooLarge() });
    const err = await caughtAsync(p.send([{ topic: 'a', record: rec('1') }])[0]!);
    expect(err.code).toBe('CEG_PAYLOAD_TOO_LARGE');
    expect(err.message).toMatch(/topic a takes at most 1000000 \(max\.message\.bytes\)/);
    expect(err.details).toMatchObject({ maxMessageBytes: 1_000_000, fate: 'notStored' });
  });
});

describe('RecordPublisher.sendAll: one promise per request (issue 14)', () => {
  it('fills each record’s result in input order and resolves once, after the last one settled; an empty call resolves at once', async () => {
    const { t, p } = await setup({ maxBatch: 2 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const sent = p.sendAll([{ topic: 'a', record: rec('1') }, { topic: 'b', record: rec('2') }, { topic: 'a', record: rec('3') }]);
    let resolved = false;
    void sent.done.then(() => (resolved = true));
    await tick(5);
    expect(resolved).toBe(false);
    // Topic b's produce went through; topic a's waits at the gate: results fill in as records settle.
    expect(sent.results.map((r) => r === undefined)).toEqual([true, false, true]);
    g.release();
    const results = await sent.done;
    expect(results).toBe(sent.results);
    expect(results.map((r) => (r.ok ? `${r.position.topic}@${r.position.offset}` : r.error.code))).toEqual(['a@0', 'b@0', 'a@1']);
    expect(await p.sendAll([]).done).toEqual([]);
  });

  it('a deadline withdraws the queued records (notStored) while the record in flight settles with the broker’s answer', async () => {
    const { t, p } = await setup({ maxBatch: 1 });
    const g = gate();
    t.steps.push({ wait: g.promise });
    const sent = p.sendAll([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }, { topic: 'a', record: rec('3') }]);
    await tick(1);
    const reason = new Error('deadline');
    sent.withdraw(reason);
    sent.withdraw(reason); // idempotent: nothing is counted twice
    // Withdrawn at once: filled in synchronously, before the request as a whole is done.
    expect(sent.results.slice(1).map((r) => r?.ok === false && deliveryFate(r.error))).toEqual(['notStored', 'notStored']);
    expect(sent.results.slice(1).map((r) => r?.ok === false && (r.error.cause as Error | undefined))).toEqual([reason, reason]);
    expect(sent.results[0]).toBeUndefined();
    g.release();
    const [first] = await sent.done;
    expect(first?.ok).toBe(true);
    expect(p.stats()).toMatchObject({ published: 1, failed: 2 });
  });

  it('a refusal for good settles every record of the request with its error, never rejecting the promise', async () => {
    const { t, p } = await setup({ retry: fastRetry(1) });
    t.steps.push({ fail: brokerDown() });
    const results = await p.sendAll([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }]).done;
    expect(results.map((r) => !r.ok && r.error.code)).toEqual(['CEG_BROKER_UNAVAILABLE', 'CEG_BROKER_UNAVAILABLE']);
    expect(results.map((r) => !r.ok && deliveryFate(r.error))).toEqual(['unconfirmed', 'unconfirmed']);
  });
});
