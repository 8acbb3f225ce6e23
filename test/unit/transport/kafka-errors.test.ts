import {
  KafkaJSConnectionError, KafkaJSError, KafkaJSNonRetriableError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError,
  KafkaJSRequestTimeoutError, KafkaJSSASLAuthenticationError,
} from 'kafkajs';
import { MultipleErrors, ProtocolError } from '@platformatic/kafka';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { fromKafkaError } from '../../../src/transport/kafka/errors.js';
import { isRoutineCommitFailure } from '../../../src/transport/commit-failure.js';

const protocol = (type: string, retriable: boolean, code: number): KafkaJSProtocolError =>
  new KafkaJSProtocolError({ message: `${type} happened`, type, code, retriable } as unknown as Error);
const exhausted = (cause: Error): KafkaJSNumberOfRetriesExceeded =>
  new KafkaJSNumberOfRetriesExceeded(cause, { retryCount: 5, retryTime: 1000 });
const ctx = { operation: 'produce', topic: 't1' };

describe('fromKafkaError', () => {
  it('maps a refused connection to CEG_BROKER_UNAVAILABLE, retriable', () => {
    const e = fromKafkaError(exhausted(new KafkaJSConnectionError('Connection error: connect ECONNREFUSED 127.0.0.1:1', { code: 'ECONNREFUSED' })), ctx);
    expect([e.code, e.retriable]).toEqual(['CEG_BROKER_UNAVAILABLE', true]);
    expect(e.details).toMatchObject({ operation: 'produce', topic: 't1', kafkaError: 'KafkaJSNumberOfRetriesExceeded' });
    expect(e.message).toBe('produce: Connection error: connect ECONNREFUSED 127.0.0.1:1');
  });

  it('maps request timeouts to CEG_DELIVERY_TIMEOUT, retriable (indeterminate)', () => {
    expect(fromKafkaError(new KafkaJSRequestTimeoutError('Request Produce timed out'), ctx).code).toBe('CEG_DELIVERY_TIMEOUT');
    const broker = fromKafkaError(exhausted(protocol('REQUEST_TIMED_OUT', true, 7)), ctx);
    expect([broker.code, broker.retriable, broker.details.kafkaType]).toEqual(['CEG_DELIVERY_TIMEOUT', true, 'REQUEST_TIMED_OUT']);
  });

  it('maps kafkajs giving up on a group coordinator to CEG_BROKER_UNAVAILABLE, retriable (kafkajs calls it non-retriable)', () => {
    const require = createRequire(import.meta.url);
    const { KafkaJSGroupCoordinatorNotFound } = require('kafkajs/src/errors.js') as { KafkaJSGroupCoordinatorNotFound: new (m: string) => Error };
    const e = fromKafkaError(new KafkaJSGroupCoordinatorNotFound('Failed to find group coordinator'), { operation: 'consume', group: 'g' });
    expect([e.code, e.retriable]).toEqual(['CEG_BROKER_UNAVAILABLE', true]);
  });

  it('maps leader and replica trouble to CEG_BROKER_UNAVAILABLE, retriable', () => {
    for (const [type, code] of [['LEADER_NOT_AVAILABLE', 5], ['NOT_ENOUGH_REPLICAS', 19], ['NOT_LEADER_FOR_PARTITION', 6]] as const) {
      const e = fromKafkaError(exhausted(protocol(type, true, code)), ctx);
      expect([type, e.code, e.retriable]).toEqual([type, 'CEG_BROKER_UNAVAILABLE', true]);
    }
  });

  it('maps an unknown topic to CEG_INVALID_NAME and a too-large record to CEG_PAYLOAD_TOO_LARGE, not retriable', () => {
    const unknown = fromKafkaError(exhausted(protocol('UNKNOWN_TOPIC_OR_PARTITION', true, 3)), ctx);
    expect([unknown.code, unknown.retriable]).toEqual(['CEG_INVALID_NAME', false]);
    const large = fromKafkaError(protocol('MESSAGE_TOO_LARGE', false, 10), ctx);
    expect([large.code, large.retriable]).toEqual(['CEG_PAYLOAD_TOO_LARGE', false]);
  });

  it('follows kafkajs\'s retriable flag of the root cause for anything else', () => {
    const retriable = fromKafkaError(exhausted(protocol('CORRUPT_MESSAGE', true, 2)), ctx);
    expect([retriable.code, retriable.retriable]).toEqual(['CEG_BROKER_UNAVAILABLE', true]);
    const permanent = fromKafkaError(protocol('INVALID_RECORD', false, 87), ctx);
    expect([permanent.code, permanent.retriable]).toEqual(['CEG_BROKER_UNAVAILABLE', false]);
    const sasl = fromKafkaError(new (KafkaJSSASLAuthenticationError as unknown as new (m: string) => Error)('SASL PLAIN authentication failed'), ctx);
    expect(sasl.retriable).toBe(false);
    expect(fromKafkaError(new KafkaJSNonRetriableError('nope'), ctx).retriable).toBe(false);
    expect(fromKafkaError(new KafkaJSError('maybe', { retriable: true }), ctx).retriable).toBe(true);
  });

  it('maps the TypeError kafkajs\'s admin throws when no broker answered the metadata request to CEG_BROKER_UNAVAILABLE, retriable', async () => {
    // kafkajs's own admin code, over a cluster whose metadata() answers null: what
    // BrokerPool.withBroker returns when every broker failed (a paused broker; seen in CI).
    type AdminFactory = (p: { logger: unknown; retry: unknown; cluster: unknown }) => {
      fetchTopicMetadata(o: { topics: string[] }): Promise<unknown>;
      listTopics(): Promise<unknown>;
    };
    const createAdmin = createRequire(import.meta.url)('kafkajs/src/admin/index.js') as AdminFactory;
    const logger = { namespace: () => logger, info: () => undefined, debug: () => undefined, warn: () => undefined, error: () => undefined };
    const admin = createAdmin({ logger, retry: { retries: 0 }, cluster: { metadata: () => Promise.resolve(null) } });
    for (const [name, call] of [['fetchTopicMetadata', () => admin.fetchTopicMetadata({ topics: ['t1'] })], ['listTopics', () => admin.listTopics()]] as const) {
      const raw = await call().then(() => undefined, (e: unknown) => e);
      expect(raw, name).toBeInstanceOf(TypeError);
      const e = fromKafkaError(raw, { operation: 'partitionCount', topic: 't1' });
      expect([name, e.code, e.retriable]).toEqual([name, 'CEG_BROKER_UNAVAILABLE', true]);
    }
  });

  it('treats errors that are not from kafkajs as not retriable, and passes GatewayErrors through', () => {
    const plain = fromKafkaError(new TypeError('bug'), ctx);
    expect([plain.code, plain.retriable]).toEqual(['CEG_BROKER_UNAVAILABLE', false]);
    expect(plain.cause).toBeInstanceOf(TypeError);
    const own = new GatewayError('CEG_CLOSED', 'closed', { retriable: false });
    expect(fromKafkaError(own, ctx)).toBe(own);
  });
});

describe('isRoutineCommitFailure (a failed lane commit logged at debug, not warn)', () => {
  it('is true for a group that moved on, found anywhere in the cause tree; false for anything else', () => {
    expect(isRoutineCommitFailure(protocol('UNKNOWN_MEMBER_ID', false, 25))).toBe(true);
    const generation = protocol('ILLEGAL_GENERATION', false, 22);
    expect(isRoutineCommitFailure(new (KafkaJSNonRetriableError as unknown as new (e: Error, o: { cause: Error }) => Error)(generation, { cause: generation }))).toBe(true); // as kafkajs's retrier wraps it
    expect(isRoutineCommitFailure(exhausted(protocol('NOT_COORDINATOR', true, 16)))).toBe(true);
    expect(isRoutineCommitFailure(protocol('REBALANCE_IN_PROGRESS', false, 27))).toBe(true);
    expect(isRoutineCommitFailure(protocol('GROUP_AUTHORIZATION_FAILED', false, 30))).toBe(false);
    expect(isRoutineCommitFailure(protocol('OFFSET_METADATA_TOO_LARGE', false, 12))).toBe(false);
    expect(isRoutineCommitFailure(new Error('UNKNOWN_MEMBER_ID'))).toBe(false); // a message is no protocol error type
    expect(isRoutineCommitFailure(undefined)).toBe(false);
    // @platformatic/kafka names it apiId, inside its retry aggregate
    expect(isRoutineCommitFailure(new MultipleErrors('commit failed', [new ProtocolError('ILLEGAL_GENERATION')]))).toBe(true);
    expect(isRoutineCommitFailure(new ProtocolError('GROUP_AUTHORIZATION_FAILED'))).toBe(false);
  });
});
