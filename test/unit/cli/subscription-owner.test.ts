/**
 * The CLI's owner check (src/cli/subscription-owner.ts) asks the gateway's own transport who is in
 * a consumer group (Transport.groupMembers), not a client of its own: here the gateway runs on an
 * in-memory transport although KAFKA_BROKERS is set (it names no broker that answers), so a
 * client of the CLI's own would fail, and the live members seen are those of that transport.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import type { Gateway } from '../../../src/app/index.js';
import { ownerOfGroup } from '../../../src/cli/subscription-owner.js';
import { loadConfig } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/observability/index.js';
import { createMemoryTransport } from '../../../src/transport/index.js';
import type { Transport } from '../../../src/transport/index.js';

const gateways: Gateway[] = [];

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close()));
});

async function gatewayOn(transport: Transport, vars: Record<string, string>): Promise<{ gw: Gateway; config: ReturnType<typeof loadConfig> }> {
  const config = loadConfig({ LOG_LEVEL: 'silent', CONNECTORS_DIR: '', ...vars });
  const gw = createGateway(config, silentLogger(), { transport, readOnly: true });
  gateways.push(gw);
  await gw.ready;
  return { gw, config };
}

describe('ownerOfGroup: live members', () => {
  it('finds the live members of a group through the gateway’s transport, and none once they stopped', async () => {
    const transport = createMemoryTransport();
    const { gw, config } = await gatewayOn(transport, { KAFKA_BROKERS: '127.0.0.1:1' });
    const topic = 'owner-check-topic';
    await transport.ensureTopics([{ name: topic, partitions: 2, retentionMs: -1, cleanupPolicy: 'delete' }]);
    const member = await transport.consume({ group: 'lib-group', topics: [topic] }, () => Promise.resolve());

    const live = await ownerOfGroup(gw, config, 'lib-group', silentLogger());
    expect(live.owner).toEqual({ by: 'members', members: 1, state: 'Stable' });

    await member.stop();
    const gone = await ownerOfGroup(gw, config, 'lib-group', silentLogger());
    expect(gone.owner).toBeUndefined();
    expect(gone.looked.at(-1)).toBe('no live member in the consumer group');
  });

  it('looks for no live members without KAFKA_BROKERS, and says so', async () => {
    const { gw, config } = await gatewayOn(createMemoryTransport(), {});
    const check = await ownerOfGroup(gw, config, 'lib-group', silentLogger());
    expect(check.owner).toBeUndefined();
    expect(check.looked.at(-1)).toBe('no live members looked for (KAFKA_BROKERS is not set)');
  });
});
