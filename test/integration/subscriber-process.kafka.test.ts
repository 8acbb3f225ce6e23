/**
 * A subscription handler in a second process (the `ce-gateway subscribe` command, run with tsx)
 * receives the events posted to the gateway's HTTP ingress, decoded with the registry schema.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRICE_LOADING_COMPLETED, priceLoaded, structuredPriceEvent } from '../fixtures/events.js';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ stack: true });
});
afterAll(async () => {
  await gw?.close();
});

describe('named subscription in a second process', () => {
  it('receives exactly the posted events, decoded, with their attributes', async () => {
    const s = stackEnv();
    const subscription = uniqueName('it-second-process');
    const child = spawn(process.execPath, [...CLI_ENTRY, 'subscribe', '--subscription', subscription, '--kind', 'PriceLoadingCompleted', '--max-events', '3'], {
      env: { ...process.env, KAFKA_BROKERS: s.kafkaBrokers.join(','), SCHEMA_REGISTRY_URL: s.schemaRegistryUrl, DATABASE_URL: s.databaseUrl, LOG_LEVEL: 'warn', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const lines: string[] = [];
    const rl = createInterface({ input: child.stdout });
    rl.on('line', (l) => lines.push(l));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      // The subscription starts at the latest offset: post only once it has joined its group.
      const deadline = Date.now() + 60_000;
      while (!stderr.includes(`subscribed ${subscription}`)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`subscriber did not start: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const correlationid = randomUUID();
      const events = ['BTC/USD', 'ETH/USD', 'XAU/USD'].map((i) => structuredPriceEvent({ correlationid }, priceLoaded(i, 'H1')));
      const res = await fetch(`${gw.url}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents-batch+json' }, body: JSON.stringify(events) });
      expect(res.status).toBe(202);
      expect(await exited).toBe(0);
      const got = lines.map((l) => JSON.parse(l) as { attributes: Record<string, unknown>; data: Record<string, unknown> });
      expect(got).toHaveLength(3);
      expect(new Set(got.map((g) => g.attributes.id))).toEqual(new Set(events.map((e) => e.id)));
      for (const g of got) {
        expect(g.attributes.type).toBe(PRICE_LOADING_COMPLETED);
        expect(g.attributes.correlationid).toBe(correlationid);
        expect(g.data.timeframe).toBe('H1');
        expect(g.data.completedAt).toBe('2022-03-15T12:00:01.250Z');
        expect(g.data.barsLoaded).toBe(120);
      }
      expect(got.map((g) => g.data.instrument).sort()).toEqual(['BTC/USD', 'ETH/USD', 'XAU/USD']);
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
    }
  });
});
