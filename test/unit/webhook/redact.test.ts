/**
 * B-F9: a sink that echoes the request (headers included) in its error body must not get the
 * subscription's own secret values into the dead letter's excerpt: `delivery.headers` values
 * (stored sealed, "never returned") and signing secrets are redacted before the excerpt is kept.
 * Against a real HTTP sink on 127.0.0.1 that answers 400 (dead letter) or 500 (retry) with the
 * request's headers as JSON.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import type { PushSettings } from '../../../src/connectors/sinks/webhook/index.js';
import { REDACTED, redact, secretTexts } from '../../../src/connectors/sinks/webhook/redact.js';
import { silentLogger } from '../../../src/observability/index.js';

let server: Server;
let base = '';
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const status = req.url === '/bad' ? 400 : 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'echo', headers: req.headers, note: 'secret="whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const settings = (path: string): PushSettings => ({
  url: `${base}${path}`,
  contentMode: 'binary',
  data: 'json',
  handshake: false,
  secrets: [SECRET],
  headers: { authorization: 'Bearer SINK-HEADER-VALUE-777', 'x-api-key': 'k"ey\\with-escapes-42', 'x-short': 'on' },
  timeoutMs: 2000,
  retryAfterCapMs: 1000,
  rateLimit: null,
  concurrency: 1,
});

describe('the dead-letter excerpt never carries the subscription\'s own secret values', () => {
  it.each([
    ['/bad', 'deadLetter'],
    ['/fail', 'retry'],
  ])('a sink echoing the request headers (%s → %s): header values and signing secrets are redacted', async (path, kind) => {
    const sink = createWebhookSink(settings(path), { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
    try {
      const out = await sink.handler({ attributes: { specversion: '1.0', id: 'e1', source: '/t', type: 't.x' }, data: { kind: 'json', value: {} } }, { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 });
      expect(out).toMatchObject({ kind });
      const excerpt = (out as { failure?: { excerpt?: string } }).failure?.excerpt ?? '';
      expect(excerpt).toContain('"error":"echo"');
      expect(excerpt).not.toContain('SINK-HEADER-VALUE-777');
      expect(excerpt).not.toContain('with-escapes-42');
      expect(excerpt).not.toContain('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
      expect(excerpt).toContain(`"authorization":"${REDACTED}"`);
      // Short values are no secrets: left alone (the header is still there).
      expect(excerpt).toContain('"x-short":"on"');
    } finally {
      await sink.close();
    }
  });

  it('redact: longest value first, JSON-escaped forms too', () => {
    const texts = secretTexts({ a: 'abcdef', b: 'abcdefgh', c: 'q"uote!!' }, []);
    expect(redact('x abcdefgh y abcdef z q\\"uote!!', texts)).toBe(`x ${REDACTED} y ${REDACTED} z ${REDACTED}`);
  });
});
