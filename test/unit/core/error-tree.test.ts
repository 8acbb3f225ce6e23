/**
 * `errorTree` (src/core/error-tree.ts): the one walker every failure classifier uses (access
 * failures, TLS checks, both Kafka adapters' error mapping).
 */
import { describe, expect, it } from 'vitest';
import { ERROR_TREE_MAX, errorTree } from '../../../src/core/error-tree.js';

describe('errorTree', () => {
  it('is the error, then its cause chain and aggregate members, breadth first, outermost first', () => {
    const root = Object.assign(new Error('root'), { code: 'ECONNRESET' });
    const second = new Error('second attempt');
    const first = new Error('first attempt', { cause: root });
    const multiple = new AggregateError([first, second], 'all attempts failed');
    const outer = new Error('send failed', { cause: multiple });
    expect(errorTree(outer).map((e) => e.message)).toEqual(['send failed', 'all attempts failed', 'first attempt', 'second attempt', 'root']);
  });

  it('ends on a cycle, skips what is not an object, and looks at no more than the bound', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    Object.assign(a, { cause: b });
    expect(errorTree(a).map((e) => e.message)).toEqual(['a', 'b']);
    expect(errorTree('a string')).toEqual([]);
    expect(errorTree(new Error('x', { cause: 'text' })).map((e) => e.message)).toEqual(['x']);
    const wide = new AggregateError(Array.from({ length: 500 }, (_, i) => new Error(`e${i}`)), 'wide');
    expect(errorTree(wide)).toHaveLength(ERROR_TREE_MAX);
    let deep: Error = new Error('bottom');
    for (let i = 0; i < 300; i++) deep = new Error(`level ${i}`, { cause: deep });
    expect(errorTree(deep, 10)).toHaveLength(10);
  });
});
