/**
 * `Expect: 100-continue` (RFC 9110 §10.1.1): `100 Continue` invites the client to send its body,
 * so it goes out only once the gateway will read it — after authentication and the partner's own
 * body limit — never ahead of a refusal. In-memory adapters, a raw socket on loopback.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { openRaw } from '../helpers/raw-http.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';

const PARTNER_MAX_BODY = 1_000;
const STRUCTURED = 'application/cloudevents+json';

describe('Expect: 100-continue', () => {
  let gw: Gateway | undefined;
  let setup: PartnersSetup | undefined;
  afterEach(async () => {
    await gw?.close();
    setup?.cleanup();
    gw = undefined;
    setup = undefined;
    vi.unstubAllEnvs();
  });

  async function start(): Promise<{ url: string; keys: PartnersSetup['keys'] }> {
    const s = partnersSetup(`continue${Date.now().toString(36)}`, { maxBodyBytes: PARTNER_MAX_BODY });
    setup = s;
    // The partners file names this variable; it is read from the process's environment.
    vi.stubEnv('TEST_GLOBEX_KEY_SHA256', s.env.TEST_GLOBEX_KEY_SHA256);
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', SUBSCRIPTIONS_TOPIC: 'continue.subscriptions', ...s.env }), createLogger({ level: 'silent' }));
    const { port } = await gw.listen();
    await gw.ready;
    return { url: `http://127.0.0.1:${port}`, keys: s.keys };
  }

  /** Sends the head only and returns the statuses received before the server closed or 3 s passed. */
  async function headOnly(url: string, lines: readonly string[]): Promise<{ statuses: number[]; closed: boolean }> {
    const c = await openRaw(url);
    c.write(`${['Host: x', ...lines, 'Expect: 100-continue'].map((l, i) => (i === 0 ? `POST /events HTTP/1.1\r\n${l}` : l)).join('\r\n')}\r\n\r\n`);
    const r = await c.closed(3000);
    c.destroy();
    return { statuses: r.responses.map((x) => x.status), closed: r.closed };
  }

  it('a caller without a valid key gets 401 without 100 Continue, and the connection is closed', async () => {
    const { url } = await start();
    for (const auth of [[], ['Authorization: Bearer not-a-key']]) {
      const r = await headOnly(url, [`Content-Type: ${STRUCTURED}`, 'Content-Length: 200', ...auth]);
      expect(r, auth.join()).toEqual({ statuses: [401], closed: true });
    }
  });

  it("a declared body over the partner's own limit (under the gateway's) gets 413 without 100 Continue", async () => {
    const { url, keys } = await start();
    const r = await headOnly(url, [`Content-Type: ${STRUCTURED}`, `Content-Length: ${PARTNER_MAX_BODY + 1}`, `Authorization: Bearer ${keys.acme}`]);
    expect(r).toEqual({ statuses: [413], closed: true });
  });

  it('an accepted request gets 100 Continue, then its answer once the body is sent: on /events and on an express route', async () => {
    const { url, keys } = await start();
    const event = JSON.stringify(structuredPriceEvent({ source: 'urn:partner:acme' }));
    const subscription = JSON.stringify({ name: 'continue-pull', kinds: ['PriceLoadingCompleted'], delivery: { mode: 'pull' } });
    for (const [target, type, body, status] of [
      ['/events', STRUCTURED, event, 202],
      ['/subscriptions', 'application/json', subscription, 201],
    ] as const) {
      const c = await openRaw(url);
      c.write(`POST ${target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${keys.acme}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`);
      expect((await c.responses(1, 5000)).map((x) => x.status), target).toEqual([100]);
      c.write(body);
      const r = await c.closed(10_000);
      expect(r.responses.map((x) => x.status), `${target}: ${r.responses.at(-1)?.body ?? ''}`).toEqual([100, status]);
      c.destroy();
    }
  });
});
