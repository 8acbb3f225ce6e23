/**
 * The topic follower (subscription definitions, replay audit log) reads its topic again when the
 * read ends with an error — a broker down longer than the client's own retries (break report:
 * gateways on @platformatic/kafka stopped reading the definitions topic for good after a broker
 * restart, kept answering ready, and delivered a subscription another instance had paused).
 * The read is broken here on the in-memory transport (the fault test on a real broker is
 * test/integration/follower-broker-restart.kafka.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TopicFollower } from '../../../../src/bus/follow/topic-follower.js';
import { GatewayError } from '../../../../src/core/errors.js';
import { silentLogger } from '../../../../src/observability/index.js';
import { createMemoryTransport } from '../../../../src/transport/index.js';
import type { Read, ReadSpec, Transport, TransportRecord } from '../../../../src/transport/index.js';
import { waitFor } from '../../../helpers/wait.js';

const TOPIC = 'follow.state';
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The memory transport, with the current read breakable (its `done` rejects) and partition look-ups failing while `down`. */
function breakable(): { transport: Transport; reads: () => number; breakRead: (err: Error) => Promise<void>; setDown: (down: boolean) => void } {
  const inner = createMemoryTransport();
  let down = false;
  let reads = 0;
  let breakCurrent: ((err: Error) => Promise<void>) | undefined;
  const transport = new Proxy(inner, {
    get(target, key) {
      if (key === 'partitionCount') {
        return (topic: string) => (down ? Promise.reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true })) : target.partitionCount(topic));
      }
      if (key === 'read') {
        return async (spec: ReadSpec, handler: (r: TransportRecord) => Promise<void>): Promise<Read> => {
          reads++;
          const read = await target.read(spec, handler);
          let rejectDone: (err: unknown) => void = () => {};
          const broken = new Promise<void>((_, reject) => (rejectDone = reject));
          breakCurrent = async (err) => {
            rejectDone(err);
            await read.stop();
          };
          return { done: Promise.race([broken, read.done]), stop: () => read.stop() };
        };
      }
      // The memory transport's methods use private fields: called on the target, not the proxy.
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { transport, reads: () => reads, breakRead: (err) => breakCurrent!(err), setDown: (d) => (down = d) };
}

const followers: TopicFollower[] = [];
afterEach(async () => {
  await Promise.all(followers.splice(0).map((f) => f.stop()));
});

describe('TopicFollower', () => {
  it('reads again from the next offset after its read ended with an error: every record applied once, in order; not following meanwhile', async () => {
    const t = breakable();
    const applied: string[] = [];
    const follower = new TopicFollower({ transport: t.transport, spec: { name: TOPIC, partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' }, apply: (r) => applied.push(dec.decode(r.value ?? new Uint8Array())), log: silentLogger(), label: 'the test topic' });
    followers.push(follower);
    const record = (v: string): { key: Uint8Array; value: Uint8Array; headers: [] } => ({ key: enc.encode(v), value: enc.encode(v), headers: [] });
    await follower.start(5_000);
    expect(follower.following).toBe(true);
    await follower.write([record('a'), record('b')], 5_000);
    expect(applied).toEqual(['a', 'b']);

    t.setDown(true);
    await t.breakRead(new GatewayError('CEG_BROKER_UNAVAILABLE', 'read: metadata failed 6 times', { retriable: true }));
    await waitFor('the follower to notice', () => !follower.following, 5_000, 10);
    // Written by another instance while this one is not reading.
    await t.transport.produce(TOPIC, [record('c'), record('d')]);
    await new Promise((r) => setTimeout(r, 700)); // at least one failed try to read again
    expect(follower.following).toBe(false);
    expect(applied).toEqual(['a', 'b']);

    t.setDown(false);
    await waitFor('following again', () => follower.following, 15_000, 20);
    await follower.catchUp(5_000);
    expect(applied).toEqual(['a', 'b', 'c', 'd']);
    await follower.write([record('e')], 5_000);
    expect(applied).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(t.reads()).toBe(2);
  });

  it('a stop while it waits to read again ends the waiting: no read is started afterwards', async () => {
    const t = breakable();
    const follower = new TopicFollower({ transport: t.transport, spec: { name: TOPIC, partitions: 1, retentionMs: -1, cleanupPolicy: 'compact' }, apply: () => undefined, log: silentLogger(), label: 'the test topic' });
    await follower.start(5_000);
    t.setDown(true);
    await t.breakRead(new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true }));
    await waitFor('the follower to notice', () => !follower.following, 5_000, 10);
    await follower.stop();
    t.setDown(false);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(t.reads()).toBe(1);
    expect(follower.following).toBe(false);
  });
});
