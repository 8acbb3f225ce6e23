/**
 * A gateway that runs no outbox relay (`serve` alone) exports no `ce_gateway_outbox_*` sample on
 * `GET /metrics` (walkthrough gap: the relay's counters and `held_keys` showed 0 there, so
 * `absent(ce_gateway_outbox_published_total)` never fired for a deployment that forgot its relay).
 * The families stay registered (HELP and TYPE lines): docs/observability.md lists them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';

let gw: Gateway;
let url: string;
beforeAll(async () => {
  gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), createLogger({ level: 'silent' }));
  const addr = await gw.listen();
  await gw.ready;
  url = `http://127.0.0.1:${addr.port}`;
});
afterAll(async () => {
  await gw?.close();
});

describe('GET /metrics of a gateway without an outbox relay', () => {
  it('has no sample of any ce_gateway_outbox_* family, and samples of its own families', async () => {
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const lines = text.split('\n');
    expect(lines.filter((l) => l.startsWith('ce_gateway_outbox_'))).toEqual([]);
    expect(lines).toContain('ce_gateway_ready 1');
    expect(text).toContain('# TYPE ce_gateway_outbox_published_total counter');
  });
});
