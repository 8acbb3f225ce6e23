import { describe, expect, it } from 'vitest';
import { OutboundQueue } from '../../../src/bus/publisher/index.js';

describe('OutboundQueue', () => {
  it('is FIFO and bounded: a full queue refuses without adding', () => {
    const q = new OutboundQueue<number>(3);
    expect(q.capacity).toBe(3);
    expect([1, 2, 3, 4].map((n) => q.offer(n))).toEqual([true, true, true, false]);
    expect(q.size).toBe(3);
    expect(q.takeUpTo(10)).toEqual([1, 2, 3]);
    expect(q.size).toBe(0);
  });

  it('takes at most max items, oldest first', () => {
    const q = new OutboundQueue<string>(5);
    ['a', 'b', 'c', 'd'].forEach((s) => q.offer(s));
    expect(q.takeUpTo(2)).toEqual(['a', 'b']);
    expect(q.size).toBe(2);
    expect(q.takeUpTo(0)).toEqual([]);
    expect(q.takeUpTo(5)).toEqual(['c', 'd']);
    expect(q.takeUpTo(5)).toEqual([]);
  });

  it('keeps order across wrap-around of the ring', () => {
    const q = new OutboundQueue<number>(3);
    const out: number[] = [];
    let next = 0;
    for (let round = 0; round < 10; round++) {
      while (q.offer(next)) next++;
      out.push(...q.takeUpTo(2));
    }
    out.push(...q.takeUpTo(3));
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
  });

  it('hasRoomFor counts the free slots exactly (a batch is admitted whole or not at all)', () => {
    const q = new OutboundQueue<number>(4);
    q.offer(1);
    expect(q.hasRoomFor(3)).toBe(true);
    expect(q.hasRoomFor(4)).toBe(false);
    expect(q.hasRoomFor(0)).toBe(true);
  });

  it('a capacity-0 queue refuses everything', () => {
    const q = new OutboundQueue<number>(0);
    expect(q.offer(1)).toBe(false);
    expect(q.hasRoomFor(1)).toBe(false);
    expect(q.takeUpTo(1)).toEqual([]);
  });
});
