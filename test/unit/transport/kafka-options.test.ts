import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../../src/core/errors.js';
import { resolveKafkaTransportOptions, silentLogger } from '../../../src/transport/index.js';

describe('resolveKafkaTransportOptions', () => {
  it('applies explicit defaults and freezes the result', () => {
    const o = resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'] });
    expect(o).toMatchObject({
      clientId: 'ce-gateway', brokers: ['127.0.0.1:9092'], connectionTimeoutMs: 3000, requestTimeoutMs: 30000,
      logLevel: 'warn', retries: 5, maxRestarts: 3, maxWaitTimeMs: 1000, partitionsConsumedConcurrently: 3,
    });
    expect(o.logger).toBe(silentLogger);
    expect(o.ssl).toBeUndefined();
    expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(o.brokers)).toBe(true);
  });

  it('keeps SASL and TLS settings named as kafkajs names them', () => {
    const o = resolveKafkaTransportOptions({
      brokers: ['kafka-1.example:9093', '[::1]:9093'],
      ssl: { rejectUnauthorized: true },
      sasl: { mechanism: 'scram-sha-512', username: 'u', password: 'p' },
    });
    expect(o.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'u', password: 'p' });
    expect(o.ssl).toEqual({ rejectUnauthorized: true });
  });

  it('reports every problem at once as CEG_INVALID_OPTIONS, not retriable', () => {
    let err: unknown;
    try {
      resolveKafkaTransportOptions({
        brokers: ['no-port', 'host:99999'],
        clientId: 'bad id!',
        connectionTimeoutMs: 0,
        requestTimeoutMs: 1.5,
        heartbeatIntervalMs: 40_000,
        sasl: { mechanism: 'gssapi' as 'plain', username: '', password: 'p' },
      });
    } catch (e) {
      err = e;
    }
    expect(isGatewayError(err, 'CEG_INVALID_OPTIONS')).toBe(true);
    if (!isGatewayError(err)) return;
    expect(err.retriable).toBe(false);
    expect((err.details.problems as string[]).map((p) => p.split(':')[0])).toEqual([
      'clientId', 'brokers', 'connectionTimeoutMs', 'requestTimeoutMs', 'sasl', 'heartbeatIntervalMs',
    ]);
  });

  it('session timeout: default 30000 with heartbeats every 3000; a shorter one given alone gets heartbeats at a third of it, never more often than asked', () => {
    expect(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'] })).toMatchObject({ sessionTimeoutMs: 30_000, heartbeatIntervalMs: 3000 });
    expect(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 6000 })).toMatchObject({ sessionTimeoutMs: 6000, heartbeatIntervalMs: 2000 });
    expect(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 45_000 })).toMatchObject({ sessionTimeoutMs: 45_000, heartbeatIntervalMs: 3000 });
    expect(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 2 })).toMatchObject({ sessionTimeoutMs: 2, heartbeatIntervalMs: 1 });
    expect(resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 })).toMatchObject({ heartbeatIntervalMs: 500 });
    // Before, a session timeout of 3000 or less given alone was refused (the fixed 3000 heartbeat).
    expect(() => resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 3000 })).not.toThrow();
    expect(() => resolveKafkaTransportOptions({ brokers: ['127.0.0.1:9092'], sessionTimeoutMs: 6000, heartbeatIntervalMs: 6000 })).toThrow(/heartbeatIntervalMs: integer ms < sessionTimeoutMs/);
  });

  it('rejects an empty broker list', () => {
    expect(() => resolveKafkaTransportOptions({ brokers: [] })).toThrow(/brokers: at least one host:port/);
  });
});
