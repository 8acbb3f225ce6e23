/**
 * Loading the subscription definitions at start-up is tried again after any failure of the
 * client, not only one it calls retriable: kafkajs answered a broker stall with a non-retriable
 * error, and the gateway stayed not ready for good (break report D3: `/readyz` 503 for minutes
 * after the broker was back). Settings the broker refuses (SASL, ACL, TLS) still stop it.
 * On the in-memory transport, whose end-offset look-ups of the definitions topic fail twice.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/core/errors.js';
import { createMemoryTransport } from '../../src/transport/index.js';
import type { Transport } from '../../src/transport/index.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const o of opened.reverse()) await o.close();
});

/** The memory transport, whose first `failures` end-offset look-ups of `topic` throw `error()`. */
function failingAt(topic: string, failures: number, error: () => Error): Transport & { failed: () => number } {
  const inner = createMemoryTransport();
  opened.push(inner);
  let failed = 0;
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'failed') return () => failed;
      if (prop === 'endOffsets') {
        return async (t: string) => {
          if (t === topic && failed < failures) {
            failed++;
            throw error();
          }
          return target.endOffsets(t);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Transport & { failed: () => number };
}

describe('loading the subscription definitions', () => {
  const topic = `ce-gateway.test-load-retry-${Date.now()}`;

  it('is tried again after a failure the client called non-retriable, and the gateway becomes ready with them', async () => {
    const transport = failingAt(topic, 2, () => new GatewayError('CEG_BROKER_UNAVAILABLE', "endOffsets: Cannot destructure property 'partitions' of 'low.pop(...)' as it is undefined.", { retriable: false }));
    const g: TestGateway = await startGateway({ stack: false, env: { SUBSCRIPTIONS_TOPIC: topic }, overrides: { transport } });
    opened.push(g);
    await expect(g.gateway.subscriptionsLoaded()).resolves.toBeUndefined();
    expect(transport.failed()).toBe(2);
    const created = await fetch(`${g.url}/subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'after-retry', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } }) });
    expect(created.status).toBe(201);
  });

  it('stops at settings the broker refuses (details.reason): no wait mends them', async () => {
    const transport = failingAt(topic, 1000, () => new GatewayError('CEG_BROKER_UNAVAILABLE', 'endOffsets: SASL authentication failed', { retriable: false, details: { reason: 'authentication' } }));
    const g: TestGateway = await startGateway({ stack: false, env: { SUBSCRIPTIONS_TOPIC: topic }, overrides: { transport } });
    opened.push(g);
    await expect(g.gateway.subscriptionsLoaded()).rejects.toThrow('SASL authentication failed');
    expect(transport.failed()).toBe(1);
  });
});
