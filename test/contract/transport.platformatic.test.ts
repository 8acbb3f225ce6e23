import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/core/errors.js';
import type { TransportLogger } from '../../src/transport/index.js';
import { createPlatformaticTransport } from '../../src/transport/index.js';
import { resolveKafkaTransportOptions } from '../../src/transport/kafka/options.js';
import { FetcherClosed, fetchOnce, listOffsets, openFetcher } from '../../src/transport/platformatic/fetcher.js';
import { stackEnv } from '../helpers/stack.js';
import { transportContract } from './transport.contract.js';

/** The client's warnings and errors go to stderr with context, so a failing case shows why. */
const logger: TransportLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: (obj, msg) => process.stderr.write(`platformatic warn: ${msg} ${JSON.stringify(obj)}\n`),
  error: (obj, msg) => process.stderr.write(`platformatic error: ${msg} ${JSON.stringify(obj)}\n`),
};

transportContract(
  'platformatic',
  () => Promise.resolve(createPlatformaticTransport({ clientId: 'ce-gateway-contract-plt', brokers: stackEnv().kafkaBrokers, logger, heartbeatIntervalMs: 500 })),
  { timeoutMs: 60_000, kind: 'kafka' },
);

describe('@platformatic/kafka transport specifics', () => {
  it('fails fast with CEG_BROKER_UNAVAILABLE (retriable) when no broker answers, and reports unhealthy', async () => {
    const t = createPlatformaticTransport({ brokers: ['127.0.0.1:1'], retries: 1, connectionTimeoutMs: 300, initialRetryTimeMs: 50, maxRetryTimeMs: 100 });
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
    const t = createPlatformaticTransport({ brokers: ['127.0.0.1:1'], retries: 1, connectionTimeoutMs: 300, initialRetryTimeMs: 50, maxRetryTimeMs: 100 });
    const err: unknown = await t.groupMembers('any-group').then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(err, 'CEG_BROKER_UNAVAILABLE')).toBe(true);
    expect(isGatewayError(err) && err.retriable).toBe(true);
    await t.close();
  });

  it('rejects a produce aborted before the send started, saying nothing was sent', async () => {
    const t = createPlatformaticTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const topic = `contract-abort-plt-${Date.now().toString(36)}`;
    await t.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const fresh = createPlatformaticTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const ac = new AbortController();
    const pending = fresh.produce(topic, [{ key: null, value: new Uint8Array([1]), headers: [] }], { signal: ac.signal });
    ac.abort(new Error('caller gave up'));
    const err: unknown = await pending.then(() => undefined, (e: unknown) => e);
    expect(isGatewayError(err, 'CEG_DELIVERY_TIMEOUT')).toBe(true);
    expect(isGatewayError(err) && err.details.indeterminate).toBe(false);
    expect(await t.endOffsets(topic)).toEqual([{ partition: 0, offset: 0n }]);
    await Promise.all([fresh.close(), t.close()]);
  });

  it('keeps many concurrent produce calls of one idempotent producer in order per partition (one send in flight)', async () => {
    const t = createPlatformaticTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const topic = `contract-concurrent-plt-${Date.now().toString(36)}`;
    await t.ensureTopics([{ name: topic, partitions: 3, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const enc = new TextEncoder();
    const calls = Array.from({ length: 40 }, (_, c) =>
      t.produce(topic, Array.from({ length: 25 }, (_, i) => ({ key: enc.encode(`k${(c * 25 + i) % 7}`), value: enc.encode(`${c}-${i}`), headers: [['h', enc.encode('v')] as const] }))),
    );
    const results = await Promise.all(calls);
    const all = results.flat();
    expect(all).toHaveLength(1000);
    // Offsets are unique per partition and each call's records of a partition are consecutive.
    const seen = new Set(all.map((p) => `${p.partition}/${p.offset}`));
    expect(seen.size).toBe(1000);
    const ends = await t.endOffsets(topic);
    expect(ends.reduce((n, e) => n + e.offset, 0n)).toBe(1000n);
    await t.close();
  });

  it('a long poll in flight ends at once when its fetcher closes (the library retried it ~1.5 s, and every stop waited for that)', async () => {
    const t = createPlatformaticTransport({ brokers: stackEnv().kafkaBrokers, logger });
    const topic = `contract-fetch-close-plt-${Date.now().toString(36)}`;
    await t.ensureTopics([{ name: topic, partitions: 1, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const fetcher = openFetcher(resolveKafkaTransportOptions({ brokers: stackEnv().kafkaBrokers, logger }), 'read', 'contract-fetch-close-never-joins');
    const end = (await listOffsets(fetcher.consumer, topic, 'latest'))[0]!;
    // An empty partition and a 60 s long poll: only the close can end this fetch within the test.
    const outcome = fetchOnce(fetcher, [{ topic, partition: 0, offset: end }], { maxWaitTimeMs: 60_000, maxBytes: 1_048_576, maxBytesPerPartition: 1_048_576 }).then(() => undefined, (e: unknown) => e);
    await fetcher.consumer.metadata({ topics: [topic] }); // the fetch is on its way
    await fetcher.close();
    const err = await outcome;
    expect(err).toBeInstanceOf(FetcherClosed);
    expect(isGatewayError(err, 'CEG_CLOSED') && err.retriable).toBe(true);
    // A fetch asked of a closed fetcher fails the same way, at once.
    await expect(fetchOnce(fetcher, [{ topic, partition: 0, offset: end }], { maxWaitTimeMs: 60_000, maxBytes: 1_048_576, maxBytesPerPartition: 1_048_576 })).rejects.toBeInstanceOf(FetcherClosed);
    await t.close();
  });
});
