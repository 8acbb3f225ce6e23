/**
 * The broker's consumer session timeout bounds as DescribeConfigs gives them (text values), read
 * by both Kafka adapters (transport/session-bounds.ts); the real broker's answer is checked in
 * test/integration/session-timeout.kafka.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { sessionBounds } from '../../../src/transport/session-bounds.js';

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
