/**
 * Attributes the gateway accepts (up to 16 KiB of UTF-8) can be larger than a receiver's server
 * takes as request headers once percent-encoded into binary mode's `ce-` headers (CloudEvents HTTP
 * binding §3.1.3.2; Node answers 431 above 16 KiB of headers). Such an event is dead-lettered with
 * a reason that says so and what to do (break report 2026-12-06: "sink answered 431: refused for
 * good" only); structured mode delivers it. A real node:http sink on 127.0.0.1, default limits.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSink, parseAllowList } from '../../../src/connectors/sinks/webhook/index.js';
import type { PushSettings } from '../../../src/connectors/sinks/webhook/index.js';
import { HEADERS_TOO_LARGE_HINT } from '../../../src/connectors/sinks/webhook/sink.js';
import { silentLogger } from '../../../src/observability/index.js';

let server: Server;
let base = '';
let received = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

const settings = (contentMode: 'binary' | 'structured'): PushSettings => ({
  url: `${base}/hook`,
  contentMode,
  data: 'json',
  handshake: false,
  secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
  headers: {},
  timeoutMs: 2000,
  retryAfterCapMs: 1000,
  rateLimit: null,
  concurrency: 1,
});

// 5,600 bytes of UTF-8 (well within the gateway's 16,384), 16,800 percent-encoded.
const event = { attributes: { specversion: '1.0' as const, id: 'big-1', source: '/t', type: 't.x', a1: '😀'.repeat(700), a2: '😀'.repeat(700) }, data: { kind: 'json' as const, value: {} } };
const ctx = { subscription: 's', topic: 't', partition: 0, offset: 0n, attempt: 1 };

describe('an event whose attributes are too large for the receiver as binary-mode headers', () => {
  it('binary mode: dead-lettered with the 431 and a reason naming structured mode; structured mode: delivered', async () => {
    const binary = createWebhookSink(settings('binary'), { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
    try {
      const out = (await binary.handler(event, ctx)) as { kind: string; reason?: string; failure?: { status?: number } };
      expect(out.kind).toBe('deadLetter');
      expect(out.failure?.status).toBe(431);
      expect(out.reason).toContain('sink answered 431');
      expect(out.reason).toContain(HEADERS_TOO_LARGE_HINT.trim());
    } finally {
      await binary.close();
    }
    expect(received).toBe(0);
    const structured = createWebhookSink(settings('structured'), { log: silentLogger(), allow: parseAllowList('127.0.0.1'), origin: 'gateway.test', ctx: { markGone: () => undefined, share: () => 1 } });
    try {
      expect(await structured.handler(event, ctx)).toMatchObject({ kind: 'ack' });
    } finally {
      await structured.close();
    }
    expect(received).toBe(1);
  });
});
