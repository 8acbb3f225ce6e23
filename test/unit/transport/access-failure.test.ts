/**
 * Settings the broker refuses (transport/access-failure) are non-retriable on both Kafka clients,
 * built from the libraries' own error classes as they wrap them (the real-broker cases, wrong
 * SASL password, unsupported mechanism, untrusted certificate, are in
 * test/integration/bus-start.kafka.test.ts; the stack has no ACLs, so authorization is here):
 * - @platformatic/kafka wraps a refused login in a NetworkError, which was retried for ever;
 * - a SASL exchange cut short by the network stays retriable (it is an outage, not a refusal);
 * - `*_AUTHORIZATION_FAILED` says `reason: authorization` on both;
 * - INVALID_SESSION_TIMEOUT says `reason: session-timeout` on both and names KAFKA_SESSION_TIMEOUT_MS
 *   (the real broker's answer: test/integration/session-timeout.kafka.test.ts).
 */
import { AuthenticationError, MultipleErrors, NetworkError, ProtocolError } from '@platformatic/kafka';
import { KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError, KafkaJSSASLAuthenticationError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { fromKafkaError } from '../../../src/transport/kafka/errors.js';
import { fromPlatformaticError } from '../../../src/transport/platformatic/errors.js';

const ctx = { operation: 'ensureTopics' };
/** How @platformatic/kafka reports a connection whose SASL step failed: metadata retried, each attempt a NetworkError. */
const platformaticAttempts = (inner: Error): Error =>
  new MultipleErrors('metadata failed 6 times.', [new MultipleErrors('Cannot connect to any broker.', [new NetworkError('Connection to 127.0.0.1:19094 failed.', { cause: inner })])]);
// kafkajs's typings declare its error constructors without the message they take.
const kafkajsProtocol = (type: string, code: number): KafkaJSProtocolError => new KafkaJSProtocolError({ message: `${type} happened`, type, code, retriable: false } as unknown as Error);

describe('settings the broker refuses', () => {
  it('platformatic: a refused SASL login inside NetworkErrors is not retriable, reason authentication', () => {
    const e = fromPlatformaticError(platformaticAttempts(new AuthenticationError('SASL authentication failed.', { cause: new ProtocolError('SASL_AUTHENTICATION_FAILED') })), ctx);
    expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', false, 'authentication']);
    expect(e.message).toMatch(/^ensureTopics: the broker refused the SASL login \(SASL_AUTHENTICATION_FAILED\): check KAFKA_SASL_USERNAME/);
  });

  it('platformatic: a mechanism the broker does not offer is not retriable, reason sasl-mechanism', () => {
    const e = fromPlatformaticError(platformaticAttempts(new AuthenticationError('Cannot find a suitable SASL mechanism.', { cause: new ProtocolError('UNSUPPORTED_SASL_MECHANISM') })), ctx);
    expect([e.retriable, e.details.reason]).toEqual([false, 'sasl-mechanism']);
  });

  it('platformatic: a SASL exchange the network cut short stays retriable', () => {
    const e = fromPlatformaticError(platformaticAttempts(new AuthenticationError('SASL authentication failed.', { cause: new NetworkError('Connection closed') })), ctx);
    expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', true, undefined]);
  });

  it.each(['TOPIC_AUTHORIZATION_FAILED', 'GROUP_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED'])('platformatic: %s is not retriable, reason authorization', (id) => {
    const e = fromPlatformaticError(new MultipleErrors('createTopics failed.', [new ProtocolError(id)]), ctx);
    expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', false, 'authorization']);
    expect(e.message).toContain(`not authorized (${id}): the Kafka user lacks an ACL`);
  });

  it.each([['TOPIC_AUTHORIZATION_FAILED', 29], ['GROUP_AUTHORIZATION_FAILED', 30], ['CLUSTER_AUTHORIZATION_FAILED', 31]] as const)('kafkajs: %s is not retriable, reason authorization', (type, code) => {
    const e = fromKafkaError(new KafkaJSNumberOfRetriesExceeded(kafkajsProtocol(type, code), { retryCount: 5, retryTime: 1000 }), ctx);
    expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', false, 'authorization']);
  });

  it('INVALID_SESSION_TIMEOUT (a join outside group.min/max.session.timeout.ms) is not retriable on both, reason session-timeout, KAFKA_SESSION_TIMEOUT_MS named', () => {
    const p = fromPlatformaticError(new MultipleErrors('joinGroup failed.', [new ProtocolError('INVALID_SESSION_TIMEOUT')]), { operation: 'consume' });
    const k = fromKafkaError(kafkajsProtocol('INVALID_SESSION_TIMEOUT', 26), { operation: 'consume' });
    for (const e of [p, k]) {
      expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', false, 'session-timeout']);
      expect(e.message).toMatch(/^consume: the broker refuses the consumer group session timeout \(INVALID_SESSION_TIMEOUT\): set KAFKA_SESSION_TIMEOUT_MS within the broker's group\.min\.session\.timeout\.ms and group\.max\.session\.timeout\.ms/);
    }
  });

  it('kafkajs: a refused SASL login is not retriable, reason authentication, the setting named', () => {
    const e = fromKafkaError(new (KafkaJSSASLAuthenticationError as unknown as new (message: string) => Error)('SASL SCRAM SHA512 authentication failed: Authentication failed during authentication due to invalid credentials'), { operation: 'connect' });
    expect([e.code, e.retriable, e.details.reason]).toEqual(['CEG_BROKER_UNAVAILABLE', false, 'authentication']);
    expect(e.message).toContain('KAFKA_SASL_PASSWORD(_FILE)');
  });
});
