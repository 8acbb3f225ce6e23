/**
 * Start-up that cannot succeed by waiting: a registry that refuses a catalog schema (incompatible
 * with what the subject already holds) fails `ready` with that reason at once, instead of being
 * retried forever as if the registry were unreachable (a retry loop would time this test out).
 */
import { describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { createMemoryRegistry } from '../../../src/registry/index.js';
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
});
