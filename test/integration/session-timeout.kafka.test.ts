/**
 * KAFKA_SESSION_TIMEOUT_MS against the broker's bounds, on both Kafka clients and the real stack
 * broker (which keeps Kafka's defaults: group.min.session.timeout.ms 6000,
 * group.max.session.timeout.ms 1800000; scripts/stack/kafka.ts sets neither):
 * - the transport reads those bounds from the broker (DescribeConfigs);
 * - a member joining with a session timeout outside them is refused (INVALID_SESSION_TIMEOUT):
 *   not retriable, `reason: session-timeout`, the setting named; one at the minimum joins;
 * - `serve` with a value outside them exits 2 at start, naming the setting and the broker's bounds
 *   (before, it ignored the variable: there was none; a transport option outside them failed
 *   every member's join later, one subscription at a time).
 */
import { describe, expect, it } from 'vitest';
import { isGatewayError } from '../../src/core/errors.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';
import { KAFKA_CLIENTS } from '../helpers/kafka-client.js';
import { runProcess } from '../helpers/spawn-node.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { stackTopics } from '../helpers/stack-topics.js';

const stack = stackEnv();

describe.each(KAFKA_CLIENTS)('consumer session timeout and the broker on %s', { timeout: 90_000 }, (client) => {
  const s = stackTopics(client);

  it("reads the broker's group.min/max.session.timeout.ms", async () => {
    const t = s.transport({});
    expect(await t.groupSessionTimeoutBounds?.()).toEqual({ minMs: 6000, maxMs: 1_800_000 });
  });

  it('a member below the minimum is refused for good, naming KAFKA_SESSION_TIMEOUT_MS; one at the minimum joins', async () => {
    const low = s.transport({ sessionTimeoutMs: 3000, maxRestarts: 0 });
    const topic = await s.topic(low, 'it-session-timeout', 1);
    const err = await low.consume({ group: uniqueName('it-session-timeout'), topics: [topic] }, async () => undefined).then(
      async (c) => {
        await c.stop();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(isGatewayError(err, 'CEG_BROKER_UNAVAILABLE'), String(err)).toBe(true);
    if (!isGatewayError(err)) return;
    expect([err.retriable, err.details.reason]).toEqual([false, 'session-timeout']);
    expect(err.message).toContain('KAFKA_SESSION_TIMEOUT_MS');

    const min = s.transport({ sessionTimeoutMs: 6000 });
    const member = await min.consume({ group: uniqueName('it-session-timeout'), topics: [topic] }, async () => undefined);
    try {
      expect(member.assignments()).toEqual([{ topic, partition: 0 }]);
    } finally {
      await member.stop();
    }
  });

  it.each(['3000', '1800001'])('serve with KAFKA_SESSION_TIMEOUT_MS=%s exits 2 at start, naming the setting and the broker\'s bounds', async (value) => {
    const env: NodeJS.ProcessEnv = { ...process.env, KAFKA_BROKERS: stack.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: stack.schemaRegistryUrl, LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', KAFKA_CLIENT: client, KAFKA_SESSION_TIMEOUT_MS: value };
    const r = await runProcess(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: process.cwd(), env, timeoutMs: 60_000 });
    expect({ code: r.code, signal: r.signal }, r.stderr.slice(-2000)).toEqual({ code: 2, signal: null });
    expect(r.stderr).toContain(`ce-gateway: cannot start: KAFKA_SESSION_TIMEOUT_MS=${value} is outside what the broker accepts (group.min.session.timeout.ms–group.max.session.timeout.ms: 6000–1800000 ms)`);
  });
});
