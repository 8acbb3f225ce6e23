/**
 * Start-up retries: a registry that refuses a catalog schema (incompatible with what the subject
 * already holds) or an unknown error fails `ready` with that reason at once, instead of being
 * retried forever as if the registry were unreachable (a retry loop would time these tests out);
 * a registry that is unreachable for a while is waited out; close() ends the waiting.
 */
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { createGateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { createConfluentRegistry, createMemoryRegistry } from '../../../src/registry/index.js';
import type { SchemaRegistry } from '../../../src/registry/port.js';
import { createMemoryTransport } from '../../../src/transport/index.js';

describe('gateway bootstrap', () => {
  it('rejects ready with CEG_SCHEMA_INCOMPATIBLE when the subject holds a schema the catalog cannot evolve from', async () => {
    const registry = createMemoryRegistry();
    await registry.register('trading.strategy-signal-value', JSON.stringify({ type: 'record', name: 'StrategySignal', namespace: 'caishen.trading', fields: [{ name: 'legacy', type: 'string' }] }));
    const transport = createMemoryTransport();
    const gw = createGateway(loadConfig({ LOG_LEVEL: 'silent' }), silentLogger(), { transport, registry });
    await expect(gw.ready).rejects.toMatchObject({ code: 'CEG_SCHEMA_INCOMPATIBLE', retriable: false });
    await gw.close();
    await transport.close();
  });

  it('waits out a registry that is unreachable for a while (retriable failures), then becomes ready', async () => {
    const failures = [unreachable(), unreachable()];
    const calls: string[] = [];
    const registry = failingFirst(createMemoryRegistry(), failures, calls);
    const transport = createMemoryTransport();
    const gw = createGateway(loadConfig({ LOG_LEVEL: 'silent' }), silentLogger(), { transport, registry });
    await gw.ready;
    expect(calls.slice(0, 3)).toEqual(['setCompatibility: failed', 'setCompatibility: failed', 'setCompatibility']);
    expect(gw.codec().catalog.kinds.length).toBeGreaterThan(0);
    await gw.close();
    await transport.close();
  });

  it('fails ready at once with an unknown error (not a retriable GatewayError), as thrown', async () => {
    const bug = new TypeError('registry.setCompatibility is broken');
    const calls: string[] = [];
    const registry = failingFirst(createMemoryRegistry(), [bug], calls);
    const transport = createMemoryTransport();
    const gw = createGateway(loadConfig({ LOG_LEVEL: 'silent' }), silentLogger(), { transport, registry });
    await expect(gw.ready).rejects.toBe(bug);
    expect(calls).toEqual(['setCompatibility: failed']);
    await gw.close();
    await transport.close();
  });

  it('close() ends the retrying against an unreachable registry: ready rejects with the closing reason', async () => {
    const registry = createConfluentRegistry({ url: `http://127.0.0.1:${await closedPort()}` });
    const transport = createMemoryTransport();
    const gw = createGateway(loadConfig({ LOG_LEVEL: 'silent' }), silentLogger(), { transport, registry });
    const outcome = gw.ready.then(
      () => 'ready',
      (err: unknown) => (err as Error).message,
    );
    await gw.close();
    expect(await outcome).toBe('gateway closing');
    await transport.close();
  });
});

function unreachable(): GatewayError {
  return new GatewayError('CEG_REGISTRY_UNAVAILABLE', 'connection refused', { retriable: true });
}

/** The real registry, whose first calls throw the given failures (one each) before it answers. */
function failingFirst(inner: SchemaRegistry, failures: readonly Error[], calls: string[]): SchemaRegistry {
  const left = [...failures];
  const gate = <A extends unknown[], R>(name: string, f: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
    const next = left.shift();
    if (next !== undefined) {
      calls.push(`${name}: failed`);
      throw next;
    }
    calls.push(name);
    return f(...a);
  };
  return {
    register: gate('register', (s: string, x: string) => inner.register(s, x)),
    schemaById: (id) => inner.schemaById(id),
    latest: (s) => inner.latest(s),
    version: (s, v) => inner.version(s, v),
    versions: (s) => inner.versions(s),
    setCompatibility: gate('setCompatibility', (s: string, l: Parameters<SchemaRegistry['setCompatibility']>[1]) => inner.setCompatibility(s, l)),
    isHealthy: () => inner.isHealthy(),
  };
}

/** A loopback port nobody listens on (connections are refused: the registry client calls that retriable). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}
