import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/core/errors.js';
import type { TransportLogger } from '../../src/transport/index.js';
import { createKafkaTransport } from '../../src/transport/index.js';
import { stackEnv } from '../helpers/stack.js';
import { transportContract } from './transport.contract.js';

/** kafkajs's warnings and errors go to stderr with context, so a failing case shows why. */
const logger: TransportLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (obj, msg) => process.stderr.write(`kafka warn: ${msg} ${JSON.stringify(obj)}\n`),
  error: (obj, msg) => process.stderr.write(`kafka error: ${msg} ${JSON.stringify(obj)}\n`),
};

transportContract(
  'kafka',
  () => Promise.resolve(createKafkaTransport({ clientId: 'ce-gateway-contract', brokers: stackEnv().kafkaBrokers, logger, heartbeatIntervalMs: 500 })),
  { timeoutMs: 60_000 },
);

describe('Kafka transport specifics', () => {
  it('fails fast with CEG_BROKER_UNAVAILABLE (retriable) when no broker answers, and reports unhealthy', async () => {
    const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], retries: 1, connectionTimeoutMs: 300, initialRetryTimeMs: 50, maxRetryTimeMs: 100 });
    const started = Date.now();
    const err: unknown = await t.produce('any-topic', [{ key: null, value: null, headers: [] }]).then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(err, 'CEG_BROKER_UNAVAILABLE')).toBe(true);
    expect(isGatewayError(err) && err.retriable).toBe(true);
    const consumeErr: unknown = await t.consume({ group: 'g', topics: ['any-topic'] }, () => Promise.resolve()).then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(consumeErr, 'CEG_BROKER_UNAVAILABLE')).toBe(true);
    expect(await t.isHealthy()).toBe(false);
    expect(Date.now() - started).toBeLessThan(15_000);
    await t.close();
  });

  it('answers groupMembers with CEG_BROKER_UNAVAILABLE (retriable) when no broker answers', async () => {
    const t = createKafkaTransport({ brokers: ['127.0.0.1:1'], retries: 1, connectionTimeoutMs: 300, initialRetryTimeMs: 50, maxRetryTimeMs: 100 });
    const err: unknown = await t.groupMembers('any-group').then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(err, 'CEG_BROKER_UNAVAILABLE')).toBe(true);
    expect(isGatewayError(err) && err.retriable).toBe(true);
    await t.close();
  });

  it('rejects a produce aborted before the send started, saying nothing was sent', async () => {
    const t = createKafkaTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const topic = `contract-abort-${Date.now().toString(36)}`;
    await t.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const fresh = createKafkaTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const ac = new AbortController();
    const pending = fresh.produce(topic, [{ key: null, value: new Uint8Array([1]), headers: [] }], { signal: ac.signal });
    ac.abort(new Error('caller gave up'));
    const err: unknown = await pending.then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(err, 'CEG_DELIVERY_TIMEOUT')).toBe(true);
    expect(isGatewayError(err) && err.details.indeterminate).toBe(false);
    expect(await t.endOffsets(topic)).toEqual([{ partition: 0, offset: 0n }]);
    await Promise.all([fresh.close(), t.close()]);
  });
});
