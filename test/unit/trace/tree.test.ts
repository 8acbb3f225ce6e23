import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { buildChain, chainSize, renderChain } from '../../../src/bus/trace/index.js';
import { MAX_CHAIN_DEPTH } from '../../../src/bus/trace/tree.js';
import type { ChainNode } from '../../../src/bus/trace/tree.js';
import type { LocatedEvent } from '../../../src/bus/trace/index.js';

function ev(id: string, time: string, causationid?: string, source = 'urn:s:1', offset = 0n): LocatedEvent {
  return {
    event: { attributes: { specversion: '1.0', id, source, type: 't', time, eventname: `E${id}`, ...(causationid ? { causationid } : {}) } },
    topic: 'x',
    partition: 0,
    offset,
  };
}

describe('buildChain', () => {
  it('nests each event under its cause and orders siblings by time', () => {
    const roots = buildChain([ev('c', '2022-01-01T00:00:03Z', 'a'), ev('a', '2022-01-01T00:00:01Z'), ev('b', '2022-01-01T00:00:02Z', 'a'), ev('d', '2022-01-01T00:00:04Z', 'b')]);
    expect(roots.map((r) => r.id)).toEqual(['a']);
    expect(roots[0]!.children.map((c) => c.id)).toEqual(['b', 'c']);
    expect(roots[0]!.children[0]!.children.map((c) => c.id)).toEqual(['d']);
  });

  it('keeps a redelivered duplicate (same source and id) once, and makes an event whose cause is missing a root', () => {
    const roots = buildChain([ev('a', '2022-01-01T00:00:01Z', undefined, 'urn:s:1', 1n), ev('a', '2022-01-01T00:00:01Z', undefined, 'urn:s:1', 2n), ev('z', '2022-01-01T00:00:00Z', 'gone')]);
    expect(roots.map((r) => r.id)).toEqual(['z', 'a']);
    expect(roots[1]!.offset).toBe('1');
  });

  it('renders a tree with relative times', () => {
    const text = renderChain('cid', buildChain([ev('a', '2022-01-01T00:00:01Z'), ev('b', '2022-01-01T00:00:02.5Z', 'a')]));
    expect(text.split('\n')).toEqual([
      'correlation cid: 2 events',
      '└─ Ea  2022-01-01T00:00:01Z +0.000s  source=urn:s:1  id=a',
      '   └─ Eb  2022-01-01T00:00:02.5Z +1.500s  source=urn:s:1  id=b',
      '',
    ]);
    expect(renderChain('none', [])).toBe('correlation none: no events found\n');
  });

  it('shows the events of a causation cycle, cut at its earliest event (they were all hidden: "no events found")', () => {
    const roots = buildChain([ev('b', '2022-01-01T00:00:02Z', 'a'), ev('a', '2022-01-01T00:00:01Z', 'b'), ev('c', '2022-01-01T00:00:03Z', 'b')]);
    expect(roots.map((r) => [r.id, r.causationCycle])).toEqual([['a', true]]);
    expect(roots[0]!.children.map((c) => c.id)).toEqual(['b']);
    expect(roots[0]!.children[0]!.children.map((c) => c.id)).toEqual(['c']);
    expect(chainSize(roots)).toBe(3);
    expect(renderChain('cid', roots)).toContain('id=a  (causation cycle: caused by b, which it caused)');
    // An event caused by itself is a root as before, not a cycle.
    expect(buildChain([ev('s', '2022-01-01T00:00:01Z', 's')]).map((r) => [r.id, r.causationCycle])).toEqual([['s', undefined]]);
  });

  it('every event read appears exactly once in the forest, whatever its causation links (generated)', () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const arbEvent = fc.record({ id: fc.constantFrom(...ids), cause: fc.option(fc.constantFrom(...ids, 'missing'), { nil: undefined }), second: fc.integer({ min: 0, max: 59 }), source: fc.constantFrom('urn:s:1', 'urn:s:2') });
    fc.assert(
      fc.property(fc.array(arbEvent, { maxLength: 20 }), (list) => {
        const located = list.map((e, i) => ev(e.id, `2022-01-01T00:00:${String(e.second).padStart(2, '0')}Z`, e.cause, e.source, BigInt(i)));
        const roots = buildChain(located);
        const seen: string[] = [];
        const walk = (n: ChainNode): void => {
          seen.push(`${n.source} ${n.id}`);
          n.children.forEach(walk);
        };
        roots.forEach(walk);
        const distinct = new Set(list.map((e) => `${e.source} ${e.id}`));
        expect(seen.sort()).toEqual([...distinct].sort());
        expect(chainSize(roots)).toBe(distinct.size);
      }),
      { numRuns: 500 },
    );
  });
});

describe('a chain deeper than MAX_CHAIN_DEPTH (a producer chooses the depth)', () => {
  const deep = (n: number): LocatedEvent[] => Array.from({ length: n }, (_, i) => ev(`e${i}`, new Date(Date.UTC(2022, 0, 1) + i * 1000).toISOString(), i === 0 ? undefined : `e${i - 1}`, 'urn:s:1', BigInt(i)));
  const depthOf = (roots: readonly ChainNode[]): number => {
    let max = 0;
    let level = [...roots];
    while (level.length > 0) {
      max++;
      level = level.flatMap((n) => n.children);
    }
    return max;
  };

  it('is cut every MAX_CHAIN_DEPTH levels into roots marked depthCut; every event stays, each exactly once; JSON and the text renderer cope with 20,000 levels', () => {
    const roots = buildChain(deep(20_000));
    expect(depthOf(roots)).toBe(MAX_CHAIN_DEPTH);
    expect(chainSize(roots)).toBe(20_000);
    expect(roots.length).toBe(20_000 / MAX_CHAIN_DEPTH);
    expect(roots.slice(1).every((r) => r.depthCut === true && r.causationid !== undefined)).toBe(true);
    expect(roots[0]!.depthCut).toBeUndefined();
    expect(roots[1]!.id).toBe(`e${MAX_CHAIN_DEPTH}`);
    expect(roots[1]!.causationid).toBe(`e${MAX_CHAIN_DEPTH - 1}`);
    expect(JSON.parse(JSON.stringify(roots)).length).toBe(roots.length);
    const text = renderChain('cid', roots);
    expect(text.split('\n')[0]).toBe('correlation cid: 20000 events');
    expect(text).toContain(`id=e${MAX_CHAIN_DEPTH}  (continues the chain under e${MAX_CHAIN_DEPTH - 1}: cut at ${MAX_CHAIN_DEPTH} levels)`);
  });

  it('a chain of exactly MAX_CHAIN_DEPTH levels is one tree, not cut', () => {
    const roots = buildChain(deep(MAX_CHAIN_DEPTH));
    expect(roots.length).toBe(1);
    expect(depthOf(roots)).toBe(MAX_CHAIN_DEPTH);
  });
});
