import { KafkaJSNonRetriableError, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { kafkaErrorTypes } from '../../../src/transport/kafka/errors.js';
import { describedGroup, readFailure } from '../../../src/transport/topics.js';

describe('describedGroup (Transport.groupMembers answers)', () => {
  it('is undefined when no member is joined, whatever the state', () => {
    for (const state of ['Empty', 'Dead', 'EMPTY', 'DEAD', 'Stable', undefined]) expect(describedGroup(state, 0)).toBeUndefined();
  });

  it("spells the classic states as Kafka does, however the client spelt them; others are passed on", () => {
    const cases = [
      ['Stable', 'Stable'], ['STABLE', 'Stable'],
      ['PreparingRebalance', 'PreparingRebalance'], ['PREPARINGREBALANCE', 'PreparingRebalance'], ['PREPARING_REBALANCE', 'PreparingRebalance'],
      ['COMPLETINGREBALANCE', 'CompletingRebalance'], ['COMPLETING_REBALANCE', 'CompletingRebalance'],
      ['Assigning', 'Assigning'],
    ] as const;
    for (const [given, spelt] of cases) expect(describedGroup(given, 2)).toEqual({ state: spelt, members: 2 });
    expect(describedGroup(undefined, 1)).toEqual({ state: 'Unknown', members: 1 });
    expect(Object.isFrozen(describedGroup('Stable', 1))).toBe(true);
  });
});

describe('readFailure', () => {
  it('turns a timeout of a read (nothing written) into CEG_BROKER_UNAVAILABLE, retriable, keeping message and details', () => {
    const timeout = new GatewayError('CEG_DELIVERY_TIMEOUT', 'groupMembers: Request timed out', { retriable: true, details: { group: 'g' } });
    const e = readFailure(timeout);
    expect([e.code, e.retriable, e.message, e.details.group]).toEqual(['CEG_BROKER_UNAVAILABLE', true, 'groupMembers: Request timed out', 'g']);
    expect(e.cause).toBe(timeout);
  });

  it('leaves every other error as it is', () => {
    const refused = new GatewayError('CEG_BROKER_UNAVAILABLE', 'untrusted certificate', { retriable: false });
    expect(readFailure(refused)).toBe(refused);
  });
});

describe('kafkaErrorTypes', () => {
  it("finds a protocol error's type through kafkajs's wrappers", () => {
    const notFound = new KafkaJSProtocolError({ message: 'The group id does not exist', type: 'GROUP_ID_NOT_FOUND', code: 69, retriable: false } as unknown as Error);
    // As kafkajs's retrier gives up on it: wrapped, the protocol error as the cause.
    const Wrapper = KafkaJSNonRetriableError as unknown as new (e: Error, opts: { cause: Error }) => Error;
    expect(kafkaErrorTypes(new Wrapper(notFound, { cause: notFound })).has('GROUP_ID_NOT_FOUND')).toBe(true);
    expect(kafkaErrorTypes(notFound).has('GROUP_ID_NOT_FOUND')).toBe(true);
    expect(kafkaErrorTypes(new Error('other')).size).toBe(0);
  });
});
