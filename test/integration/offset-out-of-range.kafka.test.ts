/**
 * A group's position outside its partition's log (Kafka's OFFSET_OUT_OF_RANGE), on both Kafka
 * clients (operators changing topics under a running gateway, 2026-12-06):
 * - records deleted before the group read them (retention, `kafka-delete-records`; here the admin
 *   API's DeleteRecords): the committed offset is below the log start;
 * - the topic deleted and created again (here: a commit past the end, which is what such a group
 *   holds — a running member commits its old position back).
 * Before: on @platformatic/kafka the broker's answer failed the member's whole fetch, every
 * partition stalled and the consumption failed after its fetch retries (a group-less read failed
 * too); on kafkajs a 'latest' subscription was reset to the end of the log, skipping the records
 * still there (and every record of a topic created again up to then), with one kafkajs error line.
 * Now both go on from the log start (Kafka's `auto.offset.reset=earliest`, the least-loss choice,
 * docs/subscriptions.md), with a warning naming the group, topic, partition and the offsets lost.
 * - a running member whose position leaves the log (records deleted while it waits to redeliver
 *   one): kafkajs reset it to the end for a 'latest' subscription (until 2026-12-07 only a member's
 *   start was moved to the log start); now kafkajs's reset is taken from its log and the partition
 *   moved to its log start with the same warning (src/transport/kafka/consumption.ts #outOfRange).
 * - a running member whose topic is deleted and created again: its position is past the new end;
 *   it goes on from the new log start. Having taken records of the old topic, its partition's lane
 *   knows their offsets and is replaced (else the new records at those offsets were skipped as
 *   taken); having taken none since it joined, kafkajs does not tell from where it fetched
 *   (`reason: position-unknown`, docs/subscriptions.md), @platformatic/kafka does (`past-end`).
 */
import { describe, expect, it } from 'vitest';
import type { RecordDecision, TransportRecord } from '../../src/transport/index.js';
import { redeliverAfter } from '../../src/transport/port.js';
import type { TransportLogger } from '../../src/transport/kafka/logging.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { uniqueName } from '../helpers/stack.js';
import { recordsNoted, recreateTopic, stackTopics, withRawAdmin } from '../helpers/stack-topics.js';
import { waitFor } from '../helpers/wait.js';

/** The tests of a topic deleted and created again: its look-up period (see setup). */
const RECHECK_MS = 2_000;

describe.each(KAFKA_CLIENTS)('a group position outside the log (%s)', (client) => {
  const stack = stackTopics(client);

  /**
   * `metadataMaxAgeMs`: how often a deleted topic is looked up again (@platformatic/kafka leaves a
   * topic found missing out of fetches that long; docs/subscriptions.md): the tests of a topic
   * created again pass a short one, else they wait out the 30 s default each. A period, not a bound:
   * a look-up made before the topic is back is made again one period later.
   */
  async function setup(opts: { metadataMaxAgeMs?: number } = {}) {
    const warnings: { obj: Record<string, unknown>; msg: string }[] = [];
    const logger: TransportLogger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (obj, msg) => void warnings.push({ obj, msg }) };
    const t = stack.transport({ clientId: uniqueName(`oor-${client}`), logger, ...opts });
    const topic = await stack.topic(t, `it-oor-${client}`, 1);
    const { handled, handler } = recordsNoted((r, value) => `${r.offset}:${value}`);
    const produce = (...values: string[]) => t.produce(topic, values.map((v) => ({ key: null, value: Buffer.from(v), headers: [], partition: 0 })));
    return { t, topic, group: uniqueName(`it-oor-group-${client}`), handled, handler, produce, warnings };
  }

  function deleteRecordsBefore(topic: string, offset: bigint): Promise<void> {
    return withRawAdmin(async (admin) => {
      await admin.fetchTopicMetadata({ topics: [topic] });
      await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: offset.toString() }] });
    });
  }

  it('a committed offset below the log start (records deleted unread): the group goes on from the log start and warns with the offsets lost', { timeout: 90_000 }, async () => {
    const { t, topic, group, handled, handler, produce, warnings } = await setup();
    const first = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    await produce('read');
    await waitFor('the first record', () => handled.includes('0:read'));
    await first.stop();
    expect((await t.committedOffsets(group, topic))[0]?.offset).toBe(1n);
    await produce('deleted-1', 'deleted-2', 'kept-3', 'kept-4'); // offsets 1..4
    await deleteRecordsBefore(topic, 3n); // 1 and 2 deleted before the group read them
    const second = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await produce('after-5');
      await waitFor('the records still in the log, and the one after', () => handled.includes('5:after-5') && handled.includes('3:kept-3') && handled.includes('4:kept-4'), 60_000);
      expect(handled).toEqual(['0:read', '3:kept-3', '4:kept-4', '5:after-5']);
      const w = warnings.find((x) => x.msg.startsWith('offset out of range'));
      expect(w?.obj).toMatchObject({ group, topic, partition: 0, lost: '2', reason: 'below-log-start' });
      expect(t.offsetResets?.snapshot().get(group)).toEqual(new Map([['below-log-start', 1]]));
    } finally {
      await second.stop();
    }
    expect((await t.committedOffsets(group, topic))[0]?.offset).toBe(6n);
  });

  it('a running member whose position leaves the log (records deleted while it waits to redeliver one) goes on from the log start and warns with the offsets lost', { timeout: 90_000 }, async () => {
    const { t, topic, group, handled, produce, warnings } = await setup();
    // Offset 1 is asked again until the records before offset 3 are deleted: the member's position
    // stays at 1 (no fetch past it), and its next fetch from there is out of range.
    let deleted = false;
    let waiting = false;
    const handler = (r: TransportRecord): Promise<RecordDecision | void> => {
      if (r.offset === 1n && !deleted) {
        waiting = true;
        return Promise.resolve(redeliverAfter(300));
      }
      handled.push(`${r.offset}:${Buffer.from(r.value ?? new Uint8Array()).toString()}`);
      return Promise.resolve();
    };
    const c = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await produce('read-0', 'deleted-1', 'deleted-2', 'kept-3', 'kept-4');
      await waitFor('offset 0 handled and offset 1 waiting to come again', () => handled.includes('0:read-0') && waiting);
      await deleteRecordsBefore(topic, 3n);
      deleted = true;
      await waitFor('the records still in the log', () => handled.includes('3:kept-3') && handled.includes('4:kept-4'), 60_000);
      await produce('after-5');
      await waitFor('the record after', () => handled.includes('5:after-5'), 30_000);
      expect(handled).toEqual(['0:read-0', '3:kept-3', '4:kept-4', '5:after-5']);
      const w = warnings.find((x) => x.msg.startsWith('offset out of range'));
      expect(w?.obj).toMatchObject({ group, topic, partition: 0, offset: '1', logStart: '3', lost: '2', reason: 'below-log-start' });
      // Counted for ce_gateway_offset_resets_total.
      expect(t.offsetResets?.snapshot().get(group)).toEqual(new Map([['below-log-start', 1]]));
    } finally {
      await c.stop();
    }
    expect((await t.committedOffsets(group, topic))[0]?.offset).toBe(6n);
  });

  it('a committed offset past the end (the topic created again): the group reads the topic from its log start', { timeout: 90_000 }, async () => {
    const { t, topic, group, handled, handler, produce, warnings } = await setup();
    await produce('new-0', 'new-1');
    // What a group holds after its topic was deleted and created again: its old, higher position.
    await t.commitOffsets(group, topic, [{ partition: 0, offset: 1_000n }]);
    const c = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await produce('new-2');
      await waitFor('every record of the topic', () => handled.length >= 3, 60_000);
      expect(handled).toEqual(['0:new-0', '1:new-1', '2:new-2']);
      const w = warnings.find((x) => x.msg.startsWith('offset out of range'));
      expect(w?.obj).toMatchObject({ group, topic, partition: 0, lost: 'unknown', reason: 'past-end' });
      expect(t.offsetResets?.snapshot().get(group)).toEqual(new Map([['past-end', 1]]));
    } finally {
      await c.stop();
    }
    expect((await t.committedOffsets(group, topic))[0]?.offset).toBe(3n);
  });

  /** Writes `value` on the topic created again (the transport may still hold the old topic's metadata for a moment: tried again until written). */
  async function produceAfterRecreation(produce: (...values: string[]) => Promise<unknown>, value: string): Promise<void> {
    await waitFor(`${value} written on the topic created again`, () => produce(value).then(() => true), 30_000, 250);
  }

  it('a running member whose topic is deleted and created again goes on from the new log start (the lane of the old offsets replaced)', { timeout: 120_000 }, async () => {
    const { t, topic, group, handled, handler, produce, warnings } = await setup({ metadataMaxAgeMs: RECHECK_MS });
    const c = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await produce('old-0', 'old-1', 'old-2');
      await waitFor('the records of the old topic', () => handled.includes('2:old-2'), 30_000);
      await recreateTopic(topic, 1);
      await produceAfterRecreation(produce, 'new-0');
      await waitFor('the first record of the topic created again', () => handled.includes('0:new-0'), 60_000);
      expect(handled.slice(0, 4)).toEqual(['0:old-0', '1:old-1', '2:old-2', '0:new-0']);
      const w = warnings.find((x) => x.msg.startsWith('offset out of range'));
      expect(w?.obj).toMatchObject({ group, topic, partition: 0, offset: '3', logStart: '0', reason: 'past-end' });
    } finally {
      await c.stop();
    }
  });

  it('a member that took nothing since it joined, when its topic is deleted and created again, goes on from the new log start', { timeout: 120_000 }, async () => {
    const { t, topic, group, handled, handler, produce, warnings } = await setup({ metadataMaxAgeMs: RECHECK_MS });
    const first = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    await produce('old-0', 'old-1', 'old-2');
    await waitFor('the records of the old topic', () => handled.includes('2:old-2'), 30_000);
    await first.stop();
    // Starts at the group's commit (3) and takes nothing before the topic goes.
    const second = await t.consume({ group, topics: [topic], startFrom: 'latest', commitEveryRecords: 1 }, handler);
    try {
      await recreateTopic(topic, 1);
      await produceAfterRecreation(produce, 'new-0');
      await waitFor('the first record of the topic created again', () => handled.includes('0:new-0'), 60_000);
      expect(handled.slice(0, 4)).toEqual(['0:old-0', '1:old-1', '2:old-2', '0:new-0']);
      const w = warnings.find((x) => x.msg.startsWith('offset out of range'));
      // kafkajs tells of the reset without the position it fetched from; this member has no lane for it.
      expect(w?.obj).toMatchObject(client === 'kafkajs' ? { group, topic, partition: 0, offset: 'unknown', lost: 'unknown', reason: 'position-unknown' } : { group, topic, partition: 0, offset: '3', reason: 'past-end' });
      expect(t.offsetResets?.snapshot().get(group)).toEqual(new Map([[client === 'kafkajs' ? 'position-unknown' : 'past-end', 1]]));
    } finally {
      await second.stop();
    }
  });

  it('a read from a position past the end (the topic created again under a cursor) reads the topic from its log start', { timeout: 60_000 }, async () => {
    const { t, topic, produce } = await setup();
    await produce('a', 'b');
    const seen: bigint[] = [];
    const read = await t.read({ topics: [topic], from: { kind: 'positions', positions: [{ topic, partition: 0, offset: 1_000n }] }, untilEnd: true }, (r) => {
      seen.push(r.offset);
      return Promise.resolve();
    });
    await read.done;
    expect(seen).toEqual([0n, 1n]);
  });
});
