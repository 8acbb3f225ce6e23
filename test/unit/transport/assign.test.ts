import { describe, expect, it } from 'vitest';
import { rangeAssign } from '../../../src/transport/memory/assign.js';

describe('rangeAssign (Kafka RangeAssignor)', () => {
  it('gives consecutive ranges, the extra partitions to the first members by id', () => {
    expect(Object.fromEntries(rangeAssign(['m2', 'm1'], 3))).toEqual({ m1: [0, 1], m2: [2] });
    expect(Object.fromEntries(rangeAssign(['a', 'b', 'c'], 7))).toEqual({ a: [0, 1, 2], b: [3, 4], c: [5, 6] });
  });

  it('leaves members without partitions when there are more members than partitions', () => {
    expect(Object.fromEntries(rangeAssign(['a', 'b', 'c'], 2))).toEqual({ a: [0], b: [1], c: [] });
    expect(rangeAssign([], 4).size).toBe(0);
  });
});
