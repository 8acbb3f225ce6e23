/**
 * Issue 8, "ordering none": a per-partition in-flight window, on the real broker. Two keys that
 * share one partition: the first event (key A) is held in its handler until the test releases it,
 * then ten events of key B follow on the same partition.
 * - ordering none (window 4): the ten B events are handled while A is still held, and the
 *   partition's committed offset does not pass A (commits stop at the lowest unfinished record);
 *   once A is released everything is committed.
 * - ordering key (with a lane of width 1, as push subscriptions run, and with the plain loop): none
 *   of the B events is handled while A is held (one record at a time per partition, so per-key
 *   order cannot be broken by a slow record); after the release they come in order.
 * The kafkajs adapter has the window; the others run one at a time (allowed by the port), so this
 * file runs on kafkajs only.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { retryPolicy } from '../../../src/core/retry.js';
import { partitionForKey } from '../../../src/transport/partitioner.js';
import { priceLoaded } from '../../fixtures/events.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog, rawKafka } from './members.js';

const cat = ownCatalog('it-window');
const admin = rawKafka().admin();
afterAll(async () => {
  await admin.disconnect();
  await cat.close();
});

/** Two instruments whose keys (`<instrument>_H1`) land on the same one of `partitions` partitions. */
function twoKeysOnOnePartition(partitions: number, tag: string): [string, string, number] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const instrument = `${tag}${i}/USD`;
    const p = partitionForKey(new TextEncoder().encode(`${instrument.replace(/[^A-Za-z0-9]/g, '-')}_H1`), partitions);
    const other = seen.get(p);
    if (other !== undefined) return [other, instrument, p];
    seen.set(p, instrument);
  }
}

const instrumentOf = (data: unknown): string => (data as { instrument: string }).instrument;

describe('per-partition in-flight window (kafkajs adapter)', () => {
  it.each([
    ['none', 4],
    ['key', 1],
    ['key', undefined],
  ] as const)('a held record on one partition: ordering %s, inFlightPerPartition %s', async (ordering, window) => {
    const gw = await cat.member({});
    await admin.connect();
    const partitions = (await admin.fetchTopicMetadata({ topics: [cat.priceTopic] })).topics[0]!.partitions.length;
    const [slowKey, fastKey, partition] = twoKeysOnOnePartition(partitions, `W${ordering}${window ?? 0}`);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let slowStarted = false;
    const handledFast: number[] = [];
    const group = uniqueName(`it-window-${ordering}-${window ?? 'plain'}`);
    const sub = await gw.subscribe({
      subscription: group,
      kinds: ['PriceLoadingCompleted'],
      ordering,
      ...(window === undefined ? {} : { inFlightPerPartition: window }),
      commitEveryRecords: 1,
      commitIntervalMs: 50,
      retry: retryPolicy({ maxAttempts: 3, initialDelayMs: 100, factor: 1, maxDelayMs: 100, jitter: 0 }),
      handler: async (event) => {
        const data = event.data?.kind === 'json' ? event.data.value : null;
        if (instrumentOf(data) === slowKey) {
          slowStarted = true;
          await released;
          return;
        }
        handledFast.push(Number((data as { barsLoaded: number }).barsLoaded));
      },
    });
    try {
      const slow = gw.publisher().publish('PriceLoadingCompleted', priceLoaded(slowKey, 'H1'))!;
      const [slowPos] = [await slow.delivered];
      expect(slowPos.partition).toBe(partition);
      await waitFor('the held record in its handler', () => slowStarted, 20_000);
      for (let i = 1; i <= 10; i++) {
        const r = gw.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(fastKey, 'H1'), barsLoaded: i })!;
        expect((await r.delivered).partition).toBe(partition);
      }
      const committed = async (): Promise<bigint> => {
        const [t] = await admin.fetchOffsets({ groupId: group, topics: [cat.priceTopic] });
        const o = t!.partitions.find((p) => p.partition === partition)!.offset;
        return BigInt(o);
      };
      if (ordering === 'none') {
        await waitFor('the ten records behind the held one handled', () => handledFast.length === 10, 20_000);
        // Give the member several commit intervals: the commit must still stop at the held record.
        await new Promise((r) => setTimeout(r, 500));
        expect(await committed()).toBeLessThanOrEqual(BigInt(slowPos.offset));
      } else {
        // Several fetch waits and commit intervals: nothing behind the held record may run.
        await new Promise((r) => setTimeout(r, 2000));
        expect(handledFast).toEqual([]);
      }
      release();
      await waitFor('every record handled', () => handledFast.length === 10, 20_000);
      if (ordering === 'key') expect(handledFast).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      await waitFor('everything committed', async () => (await committed()) === BigInt(slowPos.offset) + 11n, 20_000);
      expect(sub.stats()).toMatchObject({ handled: 11, retried: 0, deadLettered: 0 });
    } finally {
      release();
      await sub.unsubscribe();
    }
  }, 60_000);

  it('refuses a window above 1 with ordering key (per-key order needs one record at a time)', async () => {
    const gw = await cat.member({});
    await expect(
      gw.subscribe({ subscription: uniqueName('it-window-bad'), kinds: ['PriceLoadingCompleted'], ordering: 'key', inFlightPerPartition: 2, handler: () => Promise.resolve() }),
    ).rejects.toMatchObject({ code: 'CEG_INVALID_OPTIONS', details: { field: 'inFlightPerPartition' } });
  });
});
