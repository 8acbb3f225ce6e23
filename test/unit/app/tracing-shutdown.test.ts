/**
 * Issue 15 (a shutdown that drains) with tracing on: an OTLP collector that takes the connection
 * but never answers must not hold close() past the shutdown budget (SHUTDOWN_TIMEOUT_MS). The last
 * spans are dropped and the log says so, naming tracing (close() used to wait for the exporter's
 * own timeout, so the process ran out its budget and exited 1 without a reason).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../../src/app/index.js';
import { loadConfig } from '../../../src/config/index.js';
import { createLogger } from '../../../src/observability/index.js';
import { structuredPriceEvent } from '../../fixtures/events.js';
import { waitFor } from '../../helpers/wait.js';

describe('tracing at shutdown', () => {
  let collector: Server;
  const held: IncomingMessage[] = [];

  beforeAll(async () => {
    // Reads each export request and never answers it.
    collector = createServer((req) => {
      held.push(req);
      req.resume();
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  });
  afterAll(async () => {
    collector.closeAllConnections();
    await new Promise((r) => collector.close(r));
  });

  it('a collector that never answers: close() ends within the budget, the dropped spans are logged', async () => {
    const lines: { msg: string; waitedMs?: number }[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as never);
        done();
      },
    });
    const port = (collector.address() as AddressInfo).port;
    const budgetMs = 1500;
    const gw = createGateway(
      loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: String(budgetMs), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces` }),
      createLogger({ level: 'info', destination }),
    );
    const addr = await gw.listen();
    await gw.ready;
    await waitFor('tracing on', () => lines.some((l) => l.msg.includes('tracing on')), 10_000);
    const res = await fetch(`http://127.0.0.1:${addr.port}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent()) });
    expect(res.status).toBe(202);
    await gw.close();
    // The export was tried (the collector holds it) and given up on within the budget.
    expect(held.length).toBeGreaterThanOrEqual(1);
    const dropped = lines.filter((l) => l.msg.includes('did not take the last spans'));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]!.waitedMs).toBeLessThanOrEqual(budgetMs);
  }, 20_000);
});
