/**
 * Issue 10 ("Hundreds of subscriptions"): the lag arithmetic of a group from offsets alone, and the
 * cost of the shared work check on the in-memory transport — while topics are quiet it reads no
 * group's commits; new records on one topic make it look only at the groups reading that topic.
 */
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { WorkCheck, movedPast, pendingOf } from '../../../src/bus/subscriptions/index.js';
import type { OffsetsSource } from '../../../src/bus/subscriptions/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { CommittedOffset, PartitionOffset } from '../../../src/transport/port.js';

const log = createLogger({ level: 'silent' });

describe('pendingOf', () => {
  const partition = fc.record({
    start: fc.bigInt({ min: 0n, max: 1000n }),
    size: fc.bigInt({ min: 0n, max: 1000n }),
    committed: fc.option(fc.bigInt({ min: 0n, max: 3000n }), { nil: null }),
  });

  it('counts end − max(committed, log start) per partition; a commit-less partition is the whole log (earliest) or unpinned (latest)', () => {
    fc.assert(
      fc.property(fc.array(partition, { minLength: 1, maxLength: 8 }), fc.constantFrom('earliest' as const, 'latest' as const), (parts, startFrom) => {
        const committed: CommittedOffset[] = parts.map((p, i) => ({ partition: i, offset: p.committed }));
        const ends: PartitionOffset[] = parts.map((p, i) => ({ partition: i, offset: p.start + p.size }));
        const starts: PartitionOffset[] = parts.map((p, i) => ({ partition: i, offset: p.start }));
        const got = pendingOf(committed, ends, starts, startFrom);
        let records = 0n;
        for (const p of parts) {
          if (p.committed === null && startFrom === 'latest') continue;
          const from = p.committed === null || p.committed < p.start ? p.start : p.committed;
          if (p.start + p.size > from) records += p.start + p.size - from;
        }
        expect(got.records).toBe(records);
        expect(got.unpinned).toBe(startFrom === 'latest' && parts.some((p) => p.committed === null));
        // Known positions never lie past the end of a caught-up partition: a later record moves past them.
        for (const [i, p] of parts.entries()) {
          const pos = got.positions.get(i);
          if (pos === undefined) continue;
          expect(movedPast(new Map([[i, pos]]), [{ partition: i, offset: p.start + p.size + 1n }])).toBe(true);
        }
      }),
    );
  });

  it('a group caught up on every partition has nothing pending and nothing moved past it', () => {
    const ends = [{ partition: 0, offset: 5n }, { partition: 1, offset: 0n }];
    const p = pendingOf([{ partition: 0, offset: 5n }, { partition: 1, offset: 0n }], ends, [{ partition: 0, offset: 0n }, { partition: 1, offset: 0n }], 'latest');
    expect(p).toMatchObject({ records: 0n, unpinned: false });
    expect(movedPast(p.positions, ends)).toBe(false);
  });
});

/** The memory transport, counting the commit lookups. */
function counting(source: OffsetsSource): OffsetsSource & { committedCalls: string[] } {
  const committedCalls: string[] = [];
  return {
    committedCalls,
    endOffsets: (t) => source.endOffsets(t),
    offsetsAt: (t, at) => source.offsetsAt(t, at),
    committedOffsets: (g, t) => {
      committedCalls.push(g);
      return source.committedOffsets(g, t);
    },
  };
}

describe('WorkCheck', () => {
  it('reads no commit while topics are quiet; records on one topic → only the groups reading it are looked at, and only those with lag are due', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([
      { name: 'wc.a', partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' },
      { name: 'wc.b', partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' },
    ]);
    const groups = [
      ...Array.from({ length: 50 }, (_, i) => ({ group: `a-${i}`, topics: ['wc.a'], startFrom: 'latest' as const })),
      ...Array.from({ length: 50 }, (_, i) => ({ group: `b-${i}`, topics: ['wc.b'], startFrom: 'latest' as const })),
    ];
    // Every group has its start committed (as POST /subscriptions does).
    for (const g of groups) await t.commitOffsets(g.group, g.topics[0]!, [0, 1, 2].map((partition) => ({ partition, offset: 0n })));
    const src = counting(t);
    const check = new WorkCheck(src, log, 8);

    expect(await check.due(groups)).toEqual(new Set()); // first look: every group read once
    expect(src.committedCalls).toHaveLength(100);
    src.committedCalls.length = 0;
    for (let i = 0; i < 5; i++) expect(await check.due(groups)).toEqual(new Set());
    expect(src.committedCalls).toHaveLength(0); // quiet topics: no commit read at all

    await t.produce('wc.a', [{ key: new TextEncoder().encode('k'), value: null, headers: [] }]);
    // a-0 … a-4 consumed it elsewhere already (another instance's member): not due.
    for (let i = 0; i < 5; i++) await t.commitOffsets(`a-${i}`, 'wc.a', [0, 1, 2].map((partition) => ({ partition, offset: 1n })));
    const due = await check.due(groups);
    expect(due).toEqual(new Set(Array.from({ length: 45 }, (_, i) => `a-${i + 5}`)));
    expect(new Set(src.committedCalls)).toEqual(new Set(groups.filter((g) => g.topics[0] === 'wc.a').map((g) => g.group)));
    await t.close();
  });

  it('a group without commits that starts at latest is due (a member must fix its start), one that starts at earliest only when its log has records', async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([{ name: 'wc.c', partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const check = new WorkCheck(t, log, 4);
    const latest = { group: 'c-latest', topics: ['wc.c'], startFrom: 'latest' as const };
    const earliest = { group: 'c-earliest', topics: ['wc.c'], startFrom: 'earliest' as const };
    expect(await check.due([latest, earliest])).toEqual(new Set(['c-latest']));
    await t.produce('wc.c', [{ key: null, value: null, headers: [], partition: 1 }]);
    expect(await check.due([latest, earliest])).toEqual(new Set(['c-latest', 'c-earliest']));
    await t.close();
  });

  it("a group's own topics (retry, redrive) are looked at on the first look, again after forget() and once per turn; a missing one is no work, no warning, and waits ten turns (alone)", async () => {
    const t = createMemoryTransport();
    await t.ensureTopics([
      { name: 'wc.d', partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' },
      { name: 'g-d.retry', partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' },
      { name: 'g-e.redrive', partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' },
    ]);
    for (const [g, topic, n] of [['g-d', 'wc.d', 2], ['g-d', 'g-d.retry', 3], ['g-e', 'wc.d', 2], ['g-e', 'g-e.redrive', 1]] as const) await t.commitOffsets(g, topic, Array.from({ length: n }, (_, partition) => ({ partition, offset: 0n })));
    // A retry parked by a member that is gone: uncommitted on the group's own retry topic.
    await t.produce('g-d.retry', [{ key: null, value: null, headers: [], partition: 2 }]);
    const ends: string[] = [];
    const warnings: string[] = [];
    const src: OffsetsSource = { endOffsets: (topic) => (ends.push(topic), t.endOffsets(topic)), offsetsAt: (topic, at) => t.offsetsAt(topic, at), committedOffsets: (g, topic) => t.committedOffsets(g, topic) };
    const out = new PassThrough();
    out.on('data', (c: Buffer) => warnings.push(c.toString()));
    const warnLog = createLogger({ level: 'warn', destination: out });
    const d = { group: 'g-d', topics: ['wc.d'], ownTopics: ['g-d.redrive', 'g-d.retry'], startFrom: 'latest' as const };
    const e = { group: 'g-e', topics: ['wc.d'], ownTopics: ['g-e.redrive'], startFrom: 'latest' as const };
    const turnMs = 60_000;
    let now = 1_000_000;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const check = new WorkCheck(src, warnLog, 4, turnMs);
      const looked = async (): Promise<{ due: Set<string>; ends: string[] }> => {
        ends.length = 0;
        const due = await check.due([d, e]);
        return { due, ends: [...ends].sort() };
      };
      // First look: the parked retry is work; g-d.redrive does not exist (no work, nothing to warn about).
      expect(await looked()).toEqual({ due: new Set(['g-d']), ends: ['g-d.redrive', 'g-d.retry', 'g-e.redrive', 'wc.d'] });
      expect(warnings).toEqual([]);
      // Its member ran and committed the retry; the check forgets the group when the member stops: its own topics again.
      await t.commitOffsets('g-d', 'g-d.retry', [{ partition: 2, offset: 1n }]);
      check.forget('g-d');
      expect(await looked()).toEqual({ due: new Set(), ends: ['g-d.redrive', 'g-d.retry', 'wc.d'] });
      // Within a turn: the kinds' topic only.
      now += turnMs / 2;
      expect(await looked()).toEqual({ due: new Set(), ends: ['wc.d'] });
      // After a turn: the own topics at their turn; the missing g-d.redrive waits ten turns (its sibling does not).
      now += turnMs;
      expect(await looked()).toEqual({ due: new Set(), ends: ['g-d.retry', 'g-e.redrive', 'wc.d'] });
      now += turnMs * 10;
      expect((await looked()).ends).toEqual(['g-d.redrive', 'g-d.retry', 'g-e.redrive', 'wc.d']);
      expect(warnings).toEqual([]);
    } finally {
      clock.mockRestore();
      await t.close();
    }
  });
});

describe('a work check of many groups', () => {
  /** A source whose every lookup takes `ms` and that records the most lookups in flight at once. */
  function slow(ms: number): OffsetsSource & { peak: () => number; calls: () => number } {
    let inFlight = 0;
    let peak = 0;
    let calls = 0;
    const wait = async <T>(v: T): Promise<T> => {
      calls++;
      await new Promise((r) => setTimeout(r, ms));
      return v;
    };
    /** End-offset lookups in flight at once, at most. */
    const end = async (): Promise<PartitionOffset[]> => {
      peak = Math.max(peak, ++inFlight);
      try {
        return await wait([{ partition: 0, offset: 1n }]);
      } finally {
        inFlight--;
      }
    };
    return {
      endOffsets: end,
      offsetsAt: () => wait([{ partition: 0, offset: 0n }]),
      committedOffsets: () => wait([{ partition: 0, offset: null }]),
      peak: () => peak,
      calls: () => calls,
    };
  }
  const groups = Array.from({ length: 60 }, (_, i) => ({ group: `g${i}`, topics: [`t${i}`], ownTopics: [`g${i}.redrive`], startFrom: 'earliest' as const }));

  it('looks up the end offsets of its topics `concurrency` at a time (one at a time, 300 subscriptions took over 10 s)', async () => {
    const source = slow(5);
    const due = await new WorkCheck(source, log, 16).due(groups);
    expect(due.size).toBe(60);
    expect(source.peak()).toBeGreaterThan(1);
    expect(source.peak()).toBeLessThanOrEqual(16);
  });

  it('starts no new lookup once its signal aborts: a stopping instance does not wait for the whole check', async () => {
    const source = slow(20);
    const stop = new AbortController();
    const pending = new WorkCheck(source, log, 2).due(groups, stop.signal);
    setTimeout(() => stop.abort(), 30);
    await pending;
    // 120 end-offset lookups at 2 at a time would take 1.2 s and 120 calls, then the commits.
    expect(source.calls()).toBeLessThan(20);
  });
});
