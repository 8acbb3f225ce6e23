/**
 * Fault test: the transports' group calls outside a consumer's start — `committedOffsets`,
 * `committedOffsetsOf`, `commitOffsets` (and so `resetOffsets`), `groupMembers` — as the first
 * group calls a broker ever gets. Kafka creates its offsets topic at the first FindCoordinator
 * and answers COORDINATOR_NOT_AVAILABLE until it is created and loaded (as in
 * coordinator-start.kafka.test.ts, which does the same for consume()).
 * Before: the clients retry such an answer only `retries` times (here none, `retries: 0`), and the
 * call rejected with a retriable CEG_BROKER_UNAVAILABLE — a status, a pull or a replay answered 503
 * on a broker that was answering. Now each waits for the coordinator a short while
 * (src/transport/coordinator-wait.ts GROUP_CALL_COORDINATOR_WAIT_MS) and resolves.
 * The four calls go out together, on a broker of each client's own started for it: the
 * coordinator is missing only until the first group call of the broker's life, and a broker per
 * call would take minutes. Which of them met the missing coordinator is in the log (at least one
 * did; usually all).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransportLogger } from '../../../src/transport/index.js';
import { KAFKA_CLIENTS } from '../../helpers/kafka-client.js';
import { transportOn } from '../../helpers/kafka-client.js';
import { startPrivateBroker } from '../../helpers/private-broker.js';
import type { PrivateBroker } from '../../helpers/private-broker.js';
import { uniqueName } from '../../helpers/stack.js';

/**
 * No client retry of its own, so a group call meets the missing coordinator. The wait is the
 * mechanism under test, not its 3 s default: a slow CI machine's broker may take longer to create
 * and load its offsets topic (1.5 s here), so the bound is wide.
 */
const OPTIONS = { retries: 0, initialRetryTimeMs: 100, maxRetryTimeMs: 1_000, connectionTimeoutMs: 1_000, requestTimeoutMs: 5_000, groupCallCoordinatorWaitMs: 60_000 };

describe.each(KAFKA_CLIENTS)('group calls as the first of a broker just started (%s)', (client) => {
  let broker: PrivateBroker;
  beforeAll(async () => {
    broker = await startPrivateBroker(`coord-calls-${client}`);
  }, 120_000);
  afterAll(async () => {
    await broker?.stop();
  }, 60_000);

  it('committedOffsets, committedOffsetsOf, commitOffsets and groupMembers wait for the coordinator and answer', { timeout: 90_000 }, async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const note = (obj: Record<string, unknown>, msg: string): void => void lines.push({ obj, msg });
    const logger: TransportLogger = { debug: () => undefined, info: note, warn: note, error: note };
    const t = transportOn({ clientId: uniqueName(`coord-calls-${client}`), brokers: broker.brokers, logger, ...OPTIONS }, client);
    // The topic through another transport (creating a topic asks no group coordinator).
    const setup = transportOn({ clientId: uniqueName(`coord-calls-setup-${client}`), brokers: broker.brokers, retries: 2 }, client);
    const topic = uniqueName(`coord-calls-${client}`);
    const groups = { committed: uniqueName('cc-committed'), committedOf: uniqueName('cc-committed-of'), commit: uniqueName('cc-commit'), members: uniqueName('cc-members') };
    try {
      await setup.ensureTopics([{ name: topic, partitions: 2, retentionMs: 3_600_000, cleanupPolicy: 'delete' }]);
      // Partition counts first (metadata, no group): the group calls then leave together.
      await t.partitionCount(topic);
      // Once each: no retry around them (the point of the test).
      const [committed, committedOf, , members] = await Promise.all([
        t.committedOffsets(groups.committed, topic),
        t.committedOffsetsOf!(groups.committedOf, [topic]),
        t.commitOffsets(groups.commit, topic, [{ partition: 1, offset: 0n }]),
        t.groupMembers(groups.members),
      ]);
      expect(committed).toEqual([{ partition: 0, offset: null }, { partition: 1, offset: null }]);
      expect(committedOf.get(topic)).toEqual([{ partition: 0, offset: null }, { partition: 1, offset: null }]);
      expect(members).toBeUndefined();
      // The commit went through.
      expect(await t.committedOffsets(groups.commit, topic)).toEqual([{ partition: 0, offset: null }, { partition: 1, offset: 0n }]);
      // The coordinator was missing and waited for (not a lucky broker), by the calls named.
      const waits = lines.filter((w) => w.msg.startsWith('the group coordinator is not available yet'));
      expect(waits.length, JSON.stringify(lines)).toBeGreaterThan(0);
      const known = new Map([[groups.committed, 'committedOffsets'], [groups.committedOf, 'committedOffsets'], [groups.commit, 'commitOffsets'], [groups.members, 'groupMembers']]);
      for (const w of waits) expect(w.obj.operation, JSON.stringify(w)).toBe(known.get(String(w.obj.group)));
      // The broker answered all along: no outage was logged for it.
      expect(lines.filter((l) => l.msg.startsWith('kafka: broker unreachable'))).toEqual([]);
      console.log(`${client}: calls that waited for the coordinator: ${[...new Set(waits.map((w) => String(w.obj.group)))].map((g) => known.get(g) ?? g).join(', ')}`);
    } finally {
      await Promise.allSettled([t.close(), setup.close()]);
    }
  });
});
