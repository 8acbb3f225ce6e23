/**
 * The broker's consumer session timeout bounds as DescribeConfigs gives them (text values), read
 * by both Kafka adapters (transport/session-bounds.ts) of every broker, the tightest bounds taken;
 * the real broker's answer (the dev stack has one) is checked in
 * test/integration/session-timeout.kafka.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { sessionBounds, tightestBounds } from '../../../src/transport/session-bounds.js';

const lookup = (values: Record<string, string | null>) => (name: string): string | null | undefined => values[name];

describe('sessionBounds', () => {
  it('reads group.min.session.timeout.ms and group.max.session.timeout.ms as ms', () => {
    expect(sessionBounds(lookup({ 'group.min.session.timeout.ms': '6000', 'group.max.session.timeout.ms': '1800000' }))).toEqual({ minMs: 6000, maxMs: 1_800_000 });
  });

  it.each([
    ['one missing', { 'group.min.session.timeout.ms': '6000' }],
    ['a null value (a sensitive or unknown config)', { 'group.min.session.timeout.ms': null, 'group.max.session.timeout.ms': '1800000' }],
    ['not a number', { 'group.min.session.timeout.ms': 'x', 'group.max.session.timeout.ms': '1800000' }],
    ['blank', { 'group.min.session.timeout.ms': ' ', 'group.max.session.timeout.ms': '1800000' }],
  ])('is undefined (the broker does not say) when %s', (_what, values) => {
    expect(sessionBounds(lookup(values))).toBeUndefined();
  });
});

describe('tightestBounds (every broker is asked: any may coordinate the group)', () => {
  it('takes the highest minimum and the lowest maximum of the brokers', () => {
    expect(tightestBounds([{ minMs: 6000, maxMs: 1_800_000 }, { minMs: 10_000, maxMs: 300_000 }, { minMs: 6000, maxMs: 600_000 }])).toEqual({ minMs: 10_000, maxMs: 300_000 });
  });

  it('passes over brokers that do not say, and is undefined when none says', () => {
    expect(tightestBounds([undefined, { minMs: 6000, maxMs: 1_800_000 }, undefined])).toEqual({ minMs: 6000, maxMs: 1_800_000 });
    expect(tightestBounds([undefined, undefined])).toBeUndefined();
    expect(tightestBounds([])).toBeUndefined();
  });

  it('ranges that do not overlap leave no value inside (minMs above maxMs): the start-up check refuses any', () => {
    const b = tightestBounds([{ minMs: 6000, maxMs: 20_000 }, { minMs: 30_000, maxMs: 1_800_000 }])!;
    expect(b).toEqual({ minMs: 30_000, maxMs: 20_000 });
    expect([6000, 20_000, 25_000, 30_000].some((v) => v >= b.minMs && v <= b.maxMs)).toBe(false);
  });
});
