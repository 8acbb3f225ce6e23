/**
 * The bus specification's verification table (T1, T4, T5, T7–T11), written once as caller code
 * and run on both transports (T14). Each test title starts with its id. Counts, not "something
 * arrived": every scenario asserts exactly which events each subscription handled.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalog } from '../../src/catalog/index.js';
import { Bus } from '../../src/bus/bus.js';
import type { Gateway } from '../../src/app/index.js';
import { retryPolicy } from '../../src/core/retry.js';
import type { Envelope, JsonValue } from '../../src/envelope/types.js';
import { silentLogger } from '../../src/observability/index.js';
import type { Position, TransportRecord } from '../../src/transport/port.js';
import type { DeliveryContext, Ordering, Subscription } from '../../src/bus/subscriber/index.js';
import { PRICE_TOPIC, priceLoaded, seriesUpdated } from '../fixtures/events.js';
import { uniqueName } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import type { Harness } from './harness.js';

const dec = new TextDecoder();
const fast = retryPolicy({ maxAttempts: 3, initialDelayMs: 20, factor: 2, maxDelayMs: 100, jitter: 0 });

function header(r: TransportRecord, name: string): string | undefined {
  const h = r.headers.find(([n]) => n === name);
  return h && dec.decode(h[1]);
}

/** Reads every record of a topic from the start into an array (a throwaway consumer group). */
async function readAll(gw: Gateway, topic: string, into: TransportRecord[]): Promise<{ stop(): Promise<void> }> {
  return gw.transport.consume({ group: uniqueName('reader'), topics: [topic], startFrom: 'earliest' }, async (r) => void into.push(r));
}

export function busScenarios(makeHarness: () => Harness): void {
  const h = makeHarness();
  let tag: string;
  beforeAll(() => {
    tag = uniqueName('sc');
  });
  afterAll(async () => {
    await h.close();
  });

  /** Subscribes a collector that keeps only this test's events (by instrument prefix). */
  async function collect(gw: Gateway, subscription: string, prefix: string, opts: { ordering?: Ordering; startFrom?: 'latest' | 'earliest'; kinds?: string[] } = {}): Promise<{ sub: Subscription; events: Envelope[] }> {
    const events: Envelope[] = [];
    const sub = await gw.subscribe({
      subscription,
      kinds: opts.kinds ?? ['PriceLoadingCompleted'],
      retry: fast,
      ...(opts.ordering ? { ordering: opts.ordering } : {}),
      ...(opts.startFrom ? { startFrom: opts.startFrom } : {}),
      handler: async (e) => {
        const d = e.data?.kind === 'json' ? (e.data.value as { instrument?: string }) : undefined;
        if (d?.instrument?.startsWith(prefix)) events.push(e);
      },
    });
    return { sub, events };
  }

  async function publish(gw: Gateway, instrument: string, bar = '22031512'): Promise<{ id: string; position: Position }> {
    const receipt = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(instrument, 'H1', bar));
    if (receipt === undefined) throw new Error('PriceLoadingCompleted is declared publish: true');
    return { id: receipt.id, position: await receipt.delivered };
  }

  const ids = (events: readonly Envelope[]): string[] => events.map((e) => e.attributes.id);

  describe(`bus scenarios on ${h.name}`, () => {
    it('T1 no publisher attached: publishing is no error and in-process handlers still run', async () => {
      const gw = await h.member();
      const before = await gw.transport.endOffsets(PRICE_TOPIC);
      const bus = new Bus({ role: 'none', catalog: loadCatalog(), log: silentLogger() });
      const seen: JsonValue[] = [];
      bus.onLocal('PriceLoadingCompleted', (data) => void seen.push(data));
      const result = bus.publish('PriceLoadingCompleted', priceLoaded(`${tag}T1/a`, 'H1'));
      await result.local;
      expect(result.remote).toBeUndefined();
      expect(seen).toEqual([priceLoaded(`${tag}T1/a`, 'H1')]);
      expect(await gw.transport.endOffsets(PRICE_TOPIC)).toEqual(before);
      await expect(bus.subscribe({ subscription: uniqueName('t1'), kinds: ['PriceLoadingCompleted'], handler: async () => {} })).rejects.toMatchObject({ code: 'CEG_INVALID_OPTIONS' });
    });

    it('T4 a stopped subscriber resumes under the same name with exactly the events published meanwhile', async () => {
      const publisher = await h.member();
      const name = uniqueName('t4');
      const prefix = `${tag}T4`;
      const first = await collect(await h.member(), name, prefix);
      const e1 = await publish(publisher, `${prefix}/k`, '1');
      await waitFor('e1 at the first process', () => first.events.length === 1);
      await first.sub.unsubscribe();
      const e2 = await publish(publisher, `${prefix}/k`, '2');
      const e3 = await publish(publisher, `${prefix}/k`, '3');
      const second = await collect(await h.member(), name, prefix);
      const e4 = await publish(publisher, `${prefix}/k`, '4'); // same key: arrives after everything before it
      await waitFor('e2..e4 at the restarted process', () => second.events.length >= 3);
      expect(ids(first.events)).toEqual([e1.id]);
      expect(ids(second.events)).toEqual([e2.id, e3.id, e4.id]);
      await second.sub.unsubscribe();
    });

    it('T5 a new name receives an event published after it subscribed and none from before', async () => {
      const gw = await h.member();
      const prefix = `${tag}T5`;
      const before = await publish(gw, `${prefix}/k`, '1');
      const fresh = await collect(gw, uniqueName('t5'), prefix);
      const after = await publish(gw, `${prefix}/k`, '2');
      await waitFor('the event published after subscribing', () => fresh.events.length >= 1);
      expect(ids(fresh.events)).toEqual([after.id]);
      expect(ids(fresh.events)).not.toContain(before.id);
      await fresh.sub.unsubscribe();
    });

    for (const ordering of ['key', 'none'] as const) {
      it(`T7 a handler that always throws is called exactly maxAttempts times, then one dead letter with every header (ordering ${ordering})`, async () => {
        const gw = await h.member();
        const name = uniqueName(`t7-${ordering}`);
        const prefix = `${tag}T7${ordering}`;
        const calls: DeliveryContext[] = [];
        const sub = await gw.subscribe({
          subscription: name,
          kinds: ['PriceLoadingCompleted'],
          retry: fast,
          ordering,
          handler: async (e, ctx) => {
            const d = e.data?.kind === 'json' ? (e.data.value as { instrument: string }) : undefined;
            if (!d?.instrument.startsWith(prefix)) return;
            calls.push(ctx);
            throw new Error('indicator store is down');
          },
        });
        const sent = await publish(gw, `${prefix}/k`);
        const dlq: TransportRecord[] = [];
        const reader = await readAll(gw, `${name}.dlq`, dlq);
        await waitFor('one dead letter', () => dlq.length >= 1, 30_000);
        await reader.stop();
        await sub.unsubscribe();
        expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
        for (const c of calls) expect({ topic: c.topic, partition: c.partition, offset: c.offset }).toEqual(sent.position);
        expect(dlq).toHaveLength(1);
        const d = dlq[0]!;
        expect(header(d, 'ce_id')).toBe(sent.id);
        expect(header(d, 'dlq_reason')).toBe('retries exhausted after 3 attempts: indicator store is down');
        expect(header(d, 'dlq_attempts')).toBe('3');
        expect(header(d, 'dlq_source_topic')).toBe(PRICE_TOPIC);
        expect(header(d, 'dlq_source_partition')).toBe(String(sent.position.partition));
        expect(header(d, 'dlq_source_offset')).toBe(sent.position.offset.toString());
        expect(header(d, 'dlq_subscription')).toBe(name);
        const first = Date.parse(header(d, 'dlq_first_failure_time')!);
        const last = Date.parse(header(d, 'dlq_last_failure_time')!);
        expect(Number.isFinite(first) && Number.isFinite(last) && first <= last).toBe(true);
        expect(d.headers.some(([n]) => n.startsWith('retry_'))).toBe(false);
        expect(dec.decode(d.key)).toBe(`${prefix.replace(/[^A-Za-z0-9]/g, '-')}-k_H1`);
        expect(d.value![0]).toBe(0); // the original Confluent-framed value
      });
    }

    it('T8 a poison record is dead-lettered and every record behind it is delivered (S6)', async () => {
      const gw = await h.member();
      const name = uniqueName('t8');
      const prefix = `${tag}T8`;
      const c = await collect(gw, name, prefix);
      const key = new TextEncoder().encode(`${prefix}-k_H1`);
      const [poison] = await gw.transport.produce(PRICE_TOPIC, [{ key, value: new TextEncoder().encode('not avro'), headers: [['ce_specversion', new TextEncoder().encode('1.0')]] }]);
      const behind = [await publish(gw, `${prefix}/k`, '1'), await publish(gw, `${prefix}/k`, '2')];
      const dlq: TransportRecord[] = [];
      const reader = await readAll(gw, `${name}.dlq`, dlq);
      await waitFor('both valid events and the dead letter', () => c.events.length >= 2 && dlq.length >= 1, 30_000);
      await reader.stop();
      await c.sub.unsubscribe();
      expect(ids(c.events)).toEqual(behind.map((b) => b.id));
      expect(dlq).toHaveLength(1);
      expect(header(dlq[0]!, 'dlq_source_offset')).toBe(poison!.offset.toString());
      expect(header(dlq[0]!, 'dlq_reason')).toMatch(/^poison: /);
    });

    it('S6 on an unordered subscription a failing record does not hold back the next record of its key', async () => {
      const gw = await h.member();
      const name = uniqueName('s6');
      const prefix = `${tag}S6`;
      const order: string[] = [];
      const slow = retryPolicy({ maxAttempts: 3, initialDelayMs: 300, factor: 2, maxDelayMs: 1000, jitter: 0 });
      const sub = await gw.subscribe({
        subscription: name,
        kinds: ['PriceLoadingCompleted'],
        retry: slow,
        ordering: 'none',
        handler: async (e) => {
          const d = e.data?.kind === 'json' ? (e.data.value as { instrument: string; barKey: string }) : undefined;
          if (!d?.instrument.startsWith(prefix)) return;
          if (d.barKey.endsWith('__1')) {
            order.push(`fail:${e.attributes.id}`);
            throw new Error('not yet');
          }
          order.push(`ok:${e.attributes.id}`);
        },
      });
      const failing = await publish(gw, `${prefix}/k`, '1');
      const next = await publish(gw, `${prefix}/k`, '2');
      const dlq: TransportRecord[] = [];
      const reader = await readAll(gw, `${name}.dlq`, dlq);
      await waitFor('the failing record dead-lettered', () => dlq.length >= 1, 30_000);
      await reader.stop();
      await sub.unsubscribe();
      expect(order).toEqual([`fail:${failing.id}`, `ok:${next.id}`, `fail:${failing.id}`, `fail:${failing.id}`]);
    });

    it('T9 two members under one name share the partitions: each event is handled once, both handle some', async () => {
      const name = uniqueName('t9');
      const prefix = `${tag}T9`;
      const a = await collect(await h.member(), name, prefix);
      const b = await collect(await h.member(), name, prefix);
      const partitions = (await (await h.member()).transport.partitionCount(PRICE_TOPIC));
      await waitFor('the group to settle over every partition', () => {
        // The event topic's partitions (each member also reads the subscription's one-partition redrive topic).
        const own = (s: typeof a.sub): number => s.assignments().filter((x) => x.topic === PRICE_TOPIC).length;
        return own(a.sub) + own(b.sub) === partitions && own(a.sub) > 0 && own(b.sub) > 0;
      }, 30_000);
      const pub = await h.member();
      const sent = await Promise.all(Array.from({ length: 30 }, (_, i) => publish(pub, `${prefix}/${i}`)));
      await waitFor('all 30 events handled', () => a.events.length + b.events.length >= 30, 30_000);
      const handled = [...ids(a.events), ...ids(b.events)];
      expect(handled).toHaveLength(30);
      expect(new Set(handled)).toEqual(new Set(sent.map((s) => s.id)));
      expect(a.events.length).toBeGreaterThan(0);
      expect(b.events.length).toBeGreaterThan(0);
      await Promise.all([a.sub.unsubscribe(), b.sub.unsubscribe()]);
    });

    it('T10 two names: each handles every event', async () => {
      const prefix = `${tag}T10`;
      const a = await collect(await h.member(), uniqueName('t10a'), prefix);
      const b = await collect(await h.member(), uniqueName('t10b'), prefix);
      const pub = await h.member();
      const sent = await Promise.all(Array.from({ length: 20 }, (_, i) => publish(pub, `${prefix}/${i}`)));
      await waitFor('every event at both names', () => a.events.length >= 20 && b.events.length >= 20, 30_000);
      const want = new Set(sent.map((s) => s.id));
      expect(new Set(ids(a.events))).toEqual(want);
      expect(new Set(ids(b.events))).toEqual(want);
      expect(a.events).toHaveLength(20);
      expect(b.events).toHaveLength(20);
      await Promise.all([a.sub.unsubscribe(), b.sub.unsubscribe()]);
    });

    it('T11 an event published inside a handler carries the handled correlationid and causationid = its id', async () => {
      const gw = await h.member();
      const prefix = `${tag}T11`;
      const chained = await collect(gw, uniqueName('t11-series'), prefix, { kinds: ['SeriesUpdateCompleted'] });
      const stage = await gw.subscribe({
        subscription: uniqueName('t11-stage'),
        kinds: ['PriceLoadingCompleted'],
        retry: fast,
        handler: async (e) => {
          const d = e.data?.kind === 'json' ? (e.data.value as { instrument: string }) : undefined;
          if (!d?.instrument.startsWith(prefix)) return;
          await gw.publisher().publish('SeriesUpdateCompleted', seriesUpdated(d.instrument, 'H1'))!.delivered;
        },
      });
      const correlationid = randomUUID();
      const receipt = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(`${prefix}/k`, 'H1'), { correlationid })!;
      await receipt.delivered;
      const outside = gw.publisher().publish('SeriesUpdateCompleted', seriesUpdated(`${prefix}/outside`, 'H1'))!;
      await waitFor('the chained event and the one from outside', () => chained.events.length >= 2, 30_000);
      await Promise.all([stage.unsubscribe(), chained.sub.unsubscribe()]);
      const inside = chained.events.find((e) => e.attributes.id !== outside.id)!;
      expect(inside.attributes.correlationid).toBe(correlationid);
      expect(inside.attributes.causationid).toBe(receipt.id);
      const fromOutside = chained.events.find((e) => e.attributes.id === outside.id)!;
      expect(fromOutside.attributes.correlationid).toBe(outside.correlationid);
      expect(fromOutside.attributes.correlationid).not.toBe(correlationid);
      expect(fromOutside.attributes.causationid).toBeUndefined();
    });
  });
}
