/**
 * The refusals log line (`http: requests refused…`) counts under the client address the
 * failed-authentication limit uses — behind TRUSTED_PROXIES the forwarded client, not the proxy —
 * and under the partner's id once a request was authenticated (src/http/refusals.ts).
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

interface Line {
  readonly msg: string;
  readonly refused?: Record<string, number>;
  readonly clients?: Record<string, Record<string, number>>;
  readonly partners?: Record<string, Record<string, number>>;
}

describe('refusals log behind a trusted proxy', () => {
  let setup: PartnersSetup;
  let gw: Gateway;
  let url: string;
  const lines: Line[] = [];

  beforeAll(async () => {
    setup = partnersSetup(`refcl${Date.now().toString(36)}`);
    process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l) as Line);
        done();
      },
    });
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', TRUSTED_PROXIES: 'loopback', RATE_LIMIT_REQUESTS_PER_S: '2', ...setup.env }), createLogger({ level: 'info', destination: sink }));
    const addr = await gw.listen();
    await gw.ready;
    url = `http://127.0.0.1:${addr.port}`;
  });
  afterAll(() => setup?.cleanup());

  it('keys by the forwarded client address and, when authenticated, by the partner id', async () => {
    const post = async (key: string, xff: string): Promise<number> => {
      const res = await fetch(`${url}/events`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': xff, 'content-type': 'text/plain' }, body: 'x' });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await post('not-a-key', '203.0.113.5')).toBe(401);
    expect(await post(setup.keys.acme, '203.0.113.6:5555')).toBe(415);
    // Refused after authentication: the partner is known, so it is named too.
    const metrics = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${setup.keys.globex}`, 'x-forwarded-for': '203.0.113.7' } });
    await metrics.arrayBuffer();
    expect(metrics.status).toBe(403);
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await post(setup.keys.globex, '203.0.113.7'));
    const limited = statuses.filter((s) => s === 429).length;
    expect(limited).toBeGreaterThan(0);
    await gw.close(); // the server's close flushes the counts (once its last connection has gone)
    await vi.waitFor(() => expect(lines.some((l) => l.refused !== undefined)).toBe(true), { timeout: 5000 });
    const report = lines.find((l) => l.refused !== undefined);
    expect(report?.msg).toBe('http: requests refused or aborted since the last report');
    expect(report?.clients).toEqual({ '203.0.113.5': { '401 CEG_UNAUTHENTICATED': 1 }, '203.0.113.6': { '415 CEG_UNSUPPORTED_MEDIA_TYPE': 1 }, '203.0.113.7': expect.objectContaining({ '403 CEG_FORBIDDEN': 1, '429 CEG_RATE_LIMITED': limited }) as unknown });
    expect(report?.partners).toEqual({ acme: { '415 CEG_UNSUPPORTED_MEDIA_TYPE': 1 }, globex: expect.objectContaining({ '403 CEG_FORBIDDEN': 1, '429 CEG_RATE_LIMITED': limited }) as unknown });
  });
});
