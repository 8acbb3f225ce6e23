/**
 * KnownTopics: `ensureTopics` asks the broker only about topics it has not seen exist within
 * `metadata.max.age.ms` (listing every topic of a cluster on each POST /subscriptions grew with the cluster).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KnownTopics } from '../../../src/transport/known-topics.js';
import type { TopicSpec } from '../../../src/transport/port.js';

const spec = (name: string): TopicSpec => ({ name, partitions: 1, retentionMs: 60_000, cleanupPolicy: 'delete' });

describe('KnownTopics', () => {
  afterEach(() => void vi.useRealTimers());

  it('leaves out topics seen to exist; asks again after maxAgeMs or after forget', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const known = new KnownTopics(300_000);
    const wanted = [spec('a'), spec('b'), spec('c')];
    expect(known.unknown(wanted).map((s) => s.name)).toEqual(['a', 'b', 'c']);
    known.exist(['a', 'c']);
    expect(known.unknown(wanted).map((s) => s.name)).toEqual(['b']);
    known.forget('c');
    expect(known.unknown(wanted).map((s) => s.name)).toEqual(['b', 'c']);
    vi.setSystemTime(1_000_000 + 300_001);
    expect(known.unknown(wanted).map((s) => s.name)).toEqual(['a', 'b', 'c']);
  });
});
