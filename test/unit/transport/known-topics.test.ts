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

  it('forgets topics not seen for maxAgeMs: a long-running gateway does not keep every topic it ever saw (deleted subscriptions\' .dlq/.redrive/.retry)', () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const known = new KnownTopics(300_000);
    known.exist(Array.from({ length: 1000 }, (_, i) => `ce-gateway.sub.anonymous.gone-${i}.dlq`));
    known.exist(['kept']);
    expect(known.size).toBe(1001);
    vi.setSystemTime(1_000_000 + 200_000);
    known.exist(['kept']);
    expect(known.size).toBe(1001); // nothing expired yet
    vi.setSystemTime(1_000_000 + 300_001);
    known.exist(['new']);
    expect(known.size).toBe(2); // 'kept' (seen 100 s ago) and 'new'
    expect(known.unknown([spec('kept'), spec('new'), spec('ce-gateway.sub.anonymous.gone-1.dlq')]).map((s) => s.name)).toEqual(['ce-gateway.sub.anonymous.gone-1.dlq']);
  });
});
