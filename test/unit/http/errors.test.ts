/**
 * The HTTP error plumbing in isolation: what an error of express, the router or body-parser
 * becomes (`asGatewayError`), the JSON body reader (`parseJsonBody`), the app's last handler when
 * an answer had already begun, and the ops server's 500 (logged once with its stack).
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/core/errors.js';
import { asGatewayError, problemHandler, undecodableSegment } from '../../../src/http/api/errors.js';
import { parseJsonBody } from '../../../src/http/api/json-body.js';
import { createOpsServer } from '../../../src/http/ops-server.js';
import { createLogger } from '../../../src/observability/index.js';
import type { Logger } from '../../../src/observability/index.js';

function capture(): { log: Logger; lines: () => Record<string, unknown>[] } {
  const out = new PassThrough();
  const raw: string[] = [];
  out.on('data', (c: Buffer) => raw.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
  return { log: createLogger({ level: 'info', destination: out }), lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** Waits for pino's stream to deliver what was written. */
const flushed = (): Promise<void> => new Promise((r) => setImmediate(r));

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((c) => c()));
});

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closers.push(() => new Promise((r) => server.close(() => r())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('asGatewayError', () => {
  const uriError = (): URIError => Object.assign(new URIError("Failed to decode param '%ZZ'"), { status: 400, statusCode: 400 });

  it('a path the router cannot decode → 400 CEG_MALFORMED_REQUEST naming the path and the segment', () => {
    const ge = asGatewayError(uriError(), '/subscriptions/ok/%ZZ/x?owner=%GG');
    expect(ge).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', retriable: false, details: { field: 'path' } });
    expect(ge.message).toContain('"%ZZ"');
    expect(undecodableSegment('/a/%41/p1%')).toBe('p1%');
    expect(undecodableSegment('/a/%41/%E2%82%AC')).toBeUndefined();
  });

  it('express\'s and body-parser\'s 4xx keep their status class; the message only when exposed', () => {
    expect(asGatewayError({ status: 413, statusCode: 413, expose: true, type: 'entity.too.large', limit: 10, message: 'request entity too large' }, '/x')).toMatchObject({ code: 'CEG_PAYLOAD_TOO_LARGE', message: 'the body exceeds 10 bytes', details: { field: 'body', maxBytes: 10 } });
    expect(asGatewayError({ status: 415, expose: true, type: 'encoding.unsupported', message: 'content encoding unsupported' }, '/x')).toMatchObject({ code: 'CEG_UNSUPPORTED_MEDIA_TYPE', details: { field: 'body' } });
    expect(asGatewayError(Object.assign(new Error('incorrect header check'), { status: 400, expose: true }), '/x', 'body')).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', message: 'the body could not be read: incorrect header check', details: { field: 'body' } });
    expect(asGatewayError({ statusCode: 418, expose: true, message: 'teapot' }, '/x')).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', message: 'teapot' });
    const hidden = asGatewayError({ status: 400, expose: false, message: 'internal detail' }, '/x');
    expect(hidden.message).toBe('the request was refused (HTTP 400)');
  });

  it('anything else is CEG_INTERNAL with the error as its cause; a GatewayError stays itself', () => {
    const boom = new Error('boom');
    expect(asGatewayError(boom, '/x')).toMatchObject({ code: 'CEG_INTERNAL', retriable: false, cause: boom });
    expect(asGatewayError({ status: 500, expose: false }, '/x').code).toBe('CEG_INTERNAL');
    expect(asGatewayError('a string', '/x').code).toBe('CEG_INTERNAL');
    const ge = new GatewayError('CEG_CONFLICT', 'taken', { retriable: false });
    expect(asGatewayError(ge, '/x')).toBe(ge);
  });
});

describe('parseJsonBody', () => {
  const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

  it('reads JSON like the ingress: a BOM ignored, an empty body {}, only objects and arrays', () => {
    expect(parseJsonBody(enc('\ufeff{"a":1}'))).toEqual({ a: 1 });
    expect(parseJsonBody(new Uint8Array(0))).toEqual({});
    expect(parseJsonBody(enc('[1]'))).toEqual([1]);
    for (const text of ['"x"', '1', 'null', '{"a":']) {
      expect(() => parseJsonBody(enc(text))).toThrow(expect.objectContaining({ code: 'CEG_MALFORMED_REQUEST', details: { field: 'body' } }) as Error);
    }
    expect(() => parseJsonBody(Uint8Array.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).toThrow(/not valid UTF-8/);
  });

  it('a member name twice in one object: CEG_MALFORMED_REQUEST naming its JSON pointer', () => {
    expect(() => parseJsonBody(enc('{"a":{"b":[{"c":1,"c":2}]}}'))).toThrow(expect.objectContaining({ code: 'CEG_MALFORMED_REQUEST', details: { field: '/a/b/0/c' } }) as Error);
    expect(() => parseJsonBody(enc('{"name":"x","na\\u006de":"y"}'))).toThrow(expect.objectContaining({ details: { field: '/name' } }) as Error);
    // The same name in different objects is fine.
    expect(parseJsonBody(enc('{"a":{"x":1},"b":{"x":2}}'))).toEqual({ a: { x: 1 }, b: { x: 2 } });
  });
});

describe('the app\'s last error handler', () => {
  it('an error after the answer began: logged once with the route, the connection closed', async () => {
    const { log, lines } = capture();
    const app = express();
    app.get('/late/:id', (_req, res) => {
      res.status(200).type('text/plain');
      res.write('partial');
      throw new Error('failed mid-answer');
    });
    app.use(problemHandler({ retryAfterS: 1, log }));
    const base = await listen(createServer(app));
    // The answer is cut short (no problem+json can follow a begun answer): never a complete 200.
    const outcome = await fetch(`${base}/late/7?k=secret`).then((r) => r.text()).then(() => 'complete', () => 'cut');
    expect(outcome).toBe('cut');
    await flushed();
    const errors = lines().filter((l) => (l.level as number) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ method: 'GET', path: '/late/7', route: '/late/:id', status: 500, code: 'CEG_INTERNAL', err: { message: 'failed mid-answer' } });
    expect(JSON.stringify(errors[0])).not.toContain('secret');
  });
});

describe('the ops server', () => {
  it('metrics failing unexpectedly: 500 problem+json without internals, logged once with its stack', async () => {
    const { log, lines } = capture();
    const base = await listen(createOpsServer({ metrics: () => Promise.reject(new Error('scrape exploded')), healthy: () => ({ ok: true }), log }));
    const r = await fetch(`${base}/metrics?token=abc`);
    expect(r.status).toBe(500);
    expect(r.headers.get('content-type')).toBe('application/problem+json');
    const text = await r.text();
    expect(text).not.toContain('exploded');
    await flushed();
    const errors = lines().filter((l) => (l.level as number) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ method: 'GET', path: '/metrics', status: 500, code: 'CEG_INTERNAL' });
    expect((errors[0]!.err as { stack: string }).stack).toContain('scrape exploded');
  });

  it('a retriable failure (503) and client errors are not logged', async () => {
    const { log, lines } = capture();
    const base = await listen(createOpsServer({ metrics: () => Promise.reject(new GatewayError('CEG_BROKER_UNAVAILABLE', 'down', { retriable: true })), healthy: () => ({ ok: true }), log }));
    expect((await fetch(`${base}/metrics`)).status).toBe(503);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
    await flushed();
    expect(lines()).toEqual([]);
  });

  it('an Expect other than 100-continue is 417 as problem+json (Node alone answers an empty 417)', async () => {
    const base = await listen(createOpsServer({ metrics: () => Promise.resolve({ contentType: 'text/plain', body: '' }), healthy: () => ({ ok: true }) }));
    const { request } = await import('node:http');
    const answer = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = request(`${base}/metrics`, { headers: { expect: '200-ok' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer.status).toBe(417);
    expect(answer.type).toBe('application/problem+json');
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'CEG_EXPECTATION_FAILED' });
  });
});
