/**
 * Issue 8, lanes on the real broker, on both Kafka clients (kafkajs and @platformatic/kafka run
 * the same lanes). Two keys A and B that share one partition: the first event (key A) is held in
 * its handler until the test releases it, then ten events of key B follow on the same partition,
 * then one more event of key A.
 * - ordering none (window 4): the B events are handled while A is still held, and the partition's
 *   committed offset does not pass A (commits stop at the lowest unfinished record); once A is
 *   released everything is committed.
 * - ordering key with a window of 4 (per-key order, as push subscriptions run): the B events are
 *   handled while A is held, in their order; the later A is not (same key: strictly after the
 *   first A); the commit does not pass the held A.
 * - ordering key with a window of 1, and with the plain loop: none of the events behind the held
 *   one is handled while it is held (one record at a time per partition).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { retryPolicy } from '../../../src/core/retry.js';
import { partitionForKey } from '../../../src/transport/partitioner.js';
import { priceLoaded } from '../../fixtures/events.js';
import { uniqueName } from '../../helpers/stack.js';
import { waitFor } from '../../helpers/wait.js';
import { ownCatalog, rawKafka } from './members.js';

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

const dataOf = (event: { data?: { kind: string; value?: unknown } }): { instrument: string; barsLoaded: number } =>
  (event.data?.kind === 'json' ? event.data.value : null) as { instrument: string; barsLoaded: number };

/** barsLoaded of the held first A event, and of the later A event. */
const FIRST_A = 1000;
const LATER_A = 2000;

describe.each(['kafkajs', 'platformatic'] as const)('per-partition lanes (%s adapter)', (client) => {
  const cat = ownCatalog(`it-window-${client}`, client);
  const admin = rawKafka().admin();
  afterAll(async () => {
    await admin.disconnect();
    await cat.close();
  });

  it.each([
    ['none', 4],
    ['key', 4],
    ['key', 1],
    ['key', undefined],
  ] as const)('a held record on one partition: ordering %s, inFlightPerPartition %s', async (ordering, window) => {
    const gw = await cat.member({});
    await admin.connect();
    const partitions = (await admin.fetchTopicMetadata({ topics: [cat.priceTopic] })).topics[0]!.partitions.length;
    const [slowKey, fastKey, partition] = twoKeysOnOnePartition(partitions, `W${client}${ordering}${window ?? 0}`);
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let slowStarted = false;
    let laterAStartedWhileHeld = false;
    let held = true;
    const handledFast: number[] = [];
    const handledA: number[] = [];
    const group = uniqueName(`it-window-${client}-${ordering}-${window ?? 'plain'}`);
    const sub = await gw.subscribe({
      subscription: group,
      kinds: ['PriceLoadingCompleted'],
      ordering,
      ...(window === undefined ? {} : { inFlightPerPartition: window }),
      commitEveryRecords: 1,
      commitIntervalMs: 50,
      retry: retryPolicy({ maxAttempts: 3, initialDelayMs: 100, factor: 1, maxDelayMs: 100, jitter: 0 }),
      handler: async (event) => {
        const data = dataOf(event);
        if (data.instrument === slowKey) {
          if (data.barsLoaded === FIRST_A) {
            slowStarted = true;
            await released;
          } else if (held) {
            laterAStartedWhileHeld = true;
          }
          handledA.push(data.barsLoaded);
          return;
        }
        handledFast.push(data.barsLoaded);
      },
    });
    try {
      const slow = gw.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(slowKey, 'H1'), barsLoaded: FIRST_A })!;
      const slowPos = await slow.delivered;
      expect(slowPos.partition).toBe(partition);
      await waitFor('the held record in its handler', () => slowStarted, 20_000);
      for (let i = 1; i <= 10; i++) {
        const r = gw.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(fastKey, 'H1'), barsLoaded: i })!;
        expect((await r.delivered).partition).toBe(partition);
      }
      const laterA = gw.publisher().publish('PriceLoadingCompleted', { ...priceLoaded(slowKey, 'H1'), barsLoaded: LATER_A })!;
      expect((await laterA.delivered).partition).toBe(partition);
      const committed = async (): Promise<bigint> => {
        const [t] = await admin.fetchOffsets({ groupId: group, topics: [cat.priceTopic] });
        return BigInt(t!.partitions.find((p) => p.partition === partition)!.offset);
      };
      const concurrentKeys = window !== undefined && window > 1;
      if (concurrentKeys) {
        await waitFor('the ten records of the other key handled while the first is held', () => handledFast.length === 10, 20_000);
        if (ordering === 'key') expect(handledFast).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        // Several commit intervals: the commit must still stop at the held record.
        await new Promise((r) => setTimeout(r, 500));
        expect(await committed()).toBeLessThanOrEqual(BigInt(slowPos.offset));
        if (ordering === 'key') expect(laterAStartedWhileHeld).toBe(false);
      } else {
        // Several fetch waits and commit intervals: nothing behind the held record may run.
        await new Promise((r) => setTimeout(r, 2000));
        expect(handledFast).toEqual([]);
        expect(laterAStartedWhileHeld).toBe(false);
      }
      held = false;
      release();
      await waitFor('every record handled', () => handledFast.length === 10 && handledA.length === 2, 20_000);
      if (ordering === 'key') {
        expect(handledFast).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(handledA).toEqual([FIRST_A, LATER_A]);
      }
      await waitFor('everything committed', async () => (await committed()) === BigInt(slowPos.offset) + 12n, 20_000);
      expect(sub.stats()).toMatchObject({ handled: 12, retried: 0, deadLettered: 0 });
    } finally {
      release();
      await sub.unsubscribe();
    }
  }, 60_000);

  it('refuses a window that is not an integer ≥ 1', async () => {
    const gw = await cat.member({});
    await expect(
      gw.subscribe({ subscription: uniqueName('it-window-bad'), kinds: ['PriceLoadingCompleted'], ordering: 'key', inFlightPerPartition: 0, handler: () => Promise.resolve() }),
    ).rejects.toMatchObject({ code: 'CEG_INVALID_OPTIONS', details: { field: 'inFlightPerPartition' } });
  });
});
