import { describe, expect, it } from 'vitest';
import { buildChain, renderChain } from '../../../src/bus/trace/index.js';
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
});
