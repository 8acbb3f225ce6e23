import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { RecordPublisher } from '../../../src/bus/publisher/index.js';
import { retryPolicy } from '../../../src/core/retry.js';
import type { PublisherStages } from '../../../src/core/stage-channels.js';
import { publisherChannel } from '../../../src/core/stage-channels.js';
import { silentLogger } from '../../../src/observability/index.js';
import { ScriptedTransport, brokerDown, rec, topic } from './helpers.js';

const seen: PublisherStages[] = [];
const listener = (m: unknown): void => void seen.push(m as PublisherStages);
const open: RecordPublisher[] = [];

async function publisher(): Promise<{ t: ScriptedTransport; p: RecordPublisher }> {
  const t = new ScriptedTransport();
  await t.ensureTopics([topic('a')]);
  const p = new RecordPublisher(t, { queueCapacity: 100, maxBatch: 10, retry: retryPolicy({ maxAttempts: 2, initialDelayMs: 1, factor: 2, maxDelayMs: 10_000, jitter: 0 }) }, silentLogger());
  open.push(p);
  return { t, p };
}

afterEach(async () => {
  unsubscribe('ce-gateway:publisher', listener);
  seen.length = 0;
  await Promise.all(open.splice(0).map((p) => p.close()));
});

describe('stage channels (issue 14: where a single event waits)', () => {
  it('publish nothing while no probe listens', async () => {
    const { p } = await publisher();
    expect(publisherChannel.hasSubscribers).toBe(false);
    await Promise.all(p.send([{ topic: 'a', record: rec('1') }]));
    expect(seen).toEqual([]);
  });

  it('give one message per produce attempt, failed ones included, with queue → call → answer in order', async () => {
    subscribe('ce-gateway:publisher', listener);
    const { t, p } = await publisher();
    t.steps.push({ fail: brokerDown() });
    const before = performance.now();
    await Promise.all(p.send([{ topic: 'a', record: rec('1') }, { topic: 'a', record: rec('2') }]));
    expect(seen.map((s) => [s.records, s.ok])).toEqual([
      [2, false],
      [2, true],
    ]);
    for (const s of seen) {
      expect(s.oldestQueuedAt).toBeGreaterThanOrEqual(before);
      expect(s.calledAt).toBeGreaterThanOrEqual(s.oldestQueuedAt);
      expect(s.answeredAt).toBeGreaterThanOrEqual(s.calledAt);
    }
    // The retry is called after the first answer: the records waited in between.
    expect(seen[1]!.calledAt).toBeGreaterThanOrEqual(seen[0]!.answeredAt);
  });
});
