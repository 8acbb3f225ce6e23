/**
 * A Kafka command whose client fails before the broker deadline (a refused connection: nothing
 * listens on 127.0.0.1:1) reports it as `ce-gateway <command>: kafka: <reason>`, the form of the
 * other broker failures (README "From the command line"). On @platformatic/kafka it read
 * `ce-gateway: partitionCount: metadata failed 6 times. (connect ECONNREFUSED …)`: no command, and
 * the adapter's internal operation name (tester's report B7); kafkajs, `ce-gateway: connect: …`.
 * The real CLI in child processes, both clients; no time is asserted.
 */
import { join } from 'node:path';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { commandFailureMessage } from '../../../src/cli/broker-deadline.js';
import { tlsListenerHint } from '../../../src/core/tls-errors.js';
import { GatewayError } from '../../../src/core/errors.js';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../../helpers/kafka-client.js';
import { runCliExpectingExit2 } from '../../helpers/cli-failure.js';

const EMPTY_ENV = join(mkdtempSync(join(tmpdir(), 'ceg-b7-')), 'empty.env');
writeFileSync(EMPTY_ENV, '');

describe('commandFailureMessage', () => {
  it('words a Kafka client failure as `ce-gateway <command>: kafka: <reason>` without the adapter operation', () => {
    const refused = new GatewayError('CEG_BROKER_UNAVAILABLE', 'partitionCount: metadata failed 6 times. (connect ECONNREFUSED 127.0.0.1:1)', { retriable: true, details: { operation: 'partitionCount', topic: 't' } });
    expect(commandFailureMessage('tail', refused)).toBe('ce-gateway tail: kafka: metadata failed 6 times. (connect ECONNREFUSED 127.0.0.1:1) [CEG_BROKER_UNAVAILABLE]');
    expect(commandFailureMessage('deadletters list', refused)).toBe('ce-gateway deadletters list: kafka: metadata failed 6 times. (connect ECONNREFUSED 127.0.0.1:1) [CEG_BROKER_UNAVAILABLE]');
    const timeout = new GatewayError('CEG_DELIVERY_TIMEOUT', 'ensureTopics: Request timed out', { retriable: true, details: { operation: 'ensureTopics' } });
    expect(commandFailureMessage('topics', timeout)).toBe('ce-gateway topics: kafka: Request timed out [CEG_DELIVERY_TIMEOUT]');
    expect(commandFailureMessage(undefined, timeout)).toBe('ce-gateway: kafka: Request timed out [CEG_DELIVERY_TIMEOUT]');
  });

  it('adds a hint naming KAFKA_SSL and the port when TLS was never set up, and only then', () => {
    const tls = new GatewayError('CEG_BROKER_UNAVAILABLE', 'partitionCount: metadata failed 6 times. (Client network socket disconnected before secure TLS connection was established; Cannot connect to any broker.)', { retriable: true, details: { operation: 'partitionCount' } });
    expect(commandFailureMessage('topics', tls)).toMatch(/^ce-gateway topics: kafka: metadata failed 6 times\. \(Client network socket disconnected before secure TLS connection was established; Cannot connect to any broker\.\) \(the connection closed before TLS was set up: with KAFKA_SSL=true, is this a TLS listener\? Check KAFKA_SSL and the port\) \[CEG_BROKER_UNAVAILABLE\]$/);
    expect(tlsListenerHint('Connection error: connect ECONNREFUSED 127.0.0.1:1')).toBeUndefined();
    expect(tlsListenerHint('Closed connection')).toBeUndefined();
  });

  it('with what the client speaks, adds the listener hint of the gateway\'s bootstrap warning to a connection the broker closed', () => {
    const closed = new GatewayError('CEG_BROKER_UNAVAILABLE', 'partitionCount: metadata failed 6 times. (Connection closed; listApis failed 6 times.)', { retriable: true, details: { operation: 'partitionCount' } });
    expect(commandFailureMessage('topics', closed, { ssl: false, sasl: false })).toBe('ce-gateway topics: kafka: metadata failed 6 times. (Connection closed; listApis failed 6 times.) (the broker closed the connection: is this a TLS or SASL listener? It drops a client without KAFKA_SSL=true or KAFKA_SASL_MECHANISM. Check the port and KAFKA_SSL and KAFKA_SASL_MECHANISM) [CEG_BROKER_UNAVAILABLE]');
    expect(commandFailureMessage('topics', closed, { ssl: true, sasl: false })).toContain('(the broker closed the connection: is this a SASL listener? It drops a client without KAFKA_SASL_MECHANISM. Check the port and KAFKA_SASL_MECHANISM)');
    expect(commandFailureMessage('topics', closed, { ssl: true, sasl: true })).toBe('ce-gateway topics: kafka: metadata failed 6 times. (Connection closed; listApis failed 6 times.) [CEG_BROKER_UNAVAILABLE]');
    // Settings never read (a failure before any command's setup): no guess on what the client lacks.
    expect(commandFailureMessage('topics', closed)).toBe('ce-gateway topics: kafka: metadata failed 6 times. (Connection closed; listApis failed 6 times.) [CEG_BROKER_UNAVAILABLE]');
  });

  it('names the command and ends with the error code for any other failure (until 2026-12-07: neither)', () => {
    expect(commandFailureMessage('tail', new GatewayError('CEG_UNKNOWN_TYPE', 'unknown event kind "X"', { retriable: false }))).toBe('ce-gateway tail: unknown event kind "X" [CEG_UNKNOWN_TYPE]');
    expect(commandFailureMessage('outbox stuck', new GatewayError('CEG_STORE_UNAVAILABLE', 'outbox table t does not exist', { retriable: false }))).toBe('ce-gateway outbox stuck: outbox table t does not exist [CEG_STORE_UNAVAILABLE]');
    // A broker failure the adapter did not word (no operation) is not re-prefixed.
    expect(commandFailureMessage('tail', new GatewayError('CEG_BROKER_UNAVAILABLE', 'kafka: no answer', { retriable: true }))).toBe('ce-gateway tail: kafka: no answer [CEG_BROKER_UNAVAILABLE]');
    // A system or database error's own code (a PostgreSQL SQLSTATE, a socket error); none without one.
    expect(commandFailureMessage('outbox stuck', Object.assign(new Error('password authentication failed for user "x"'), { code: '28P01' }))).toBe('ce-gateway outbox stuck: password authentication failed for user "x" [28P01]');
    expect(commandFailureMessage('tail', new Error('boom'))).toBe('ce-gateway tail: boom');
    expect(commandFailureMessage(undefined, new Error('boom'))).toBe('ce-gateway: boom');
  });
});

describe.concurrent('a refused broker connection names the command', () => {
  for (const client of KAFKA_CLIENTS) {
    for (const args of [['tail', 'PriceLoadingCompleted'], ['trace', 'c-b7'], ['topics']]) {
      const command = args[0]!;
      it(`${client}: ${command} exits 2 with "ce-gateway ${command}: kafka: …" naming the broker and ECONNREFUSED`, async () => {
        // A deadline well beyond the clients' own retries (platformatic about 2 s, kafkajs about 10 s):
        // the client's failure is what is reported, not the deadline's "no answer" (already in form).
        const { line, said } = await runCliExpectingExit2(['--broker-timeout', '60000', ...args], {
          env: { CE_GATEWAY_ENV_FILE: EMPTY_ENV, KAFKA_BROKERS: '127.0.0.1:1', SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1', ...kafkaClientEnv(client) },
          timeoutMs: 90_000,
        });
        expect(line, said).toMatch(new RegExp(`^ce-gateway ${command}: kafka: `));
        expect(line, said).toContain('127.0.0.1:1');
        expect(line, said).toContain('ECONNREFUSED');
        expect(line, said).not.toMatch(/partitionCount|ensureTopics|endOffsets|connect: |no answer from/);
      }, 120_000);
    }
  }
});
