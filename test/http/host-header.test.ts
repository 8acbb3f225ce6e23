/**
 * The host a request is for. RFC 9112 §3.2: more than one Host line, or an invalid (here: empty)
 * one, is 400 — as repeated ce-*, Content-Type and Authorization are refused. RFC 9112 §3.2.2: an
 * absolute-form target's authority is the host, and Host is ignored; so without authentication the
 * loopback check (DNS rebinding) reads the target's authority, not Host. HTTP/1.0 without Host is
 * for the address the client connected to (loopback, on a gateway without authentication).
 * In-memory adapters, raw requests on loopback.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { isLoopbackHostHeader } from '../../src/core/loopback.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { STRUCTURED } from './helpers.js';

let gw: TestGateway;
let port: number;
beforeAll(async () => {
  gw = await startGateway({ stack: false });
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw.close();
});

/** One POST of a valid event with these head lines (request line first), Connection: close. */
async function send(lines: readonly string[]): Promise<RawResponse> {
  const body = JSON.stringify(structuredPriceEvent());
  const [r] = await rawRequest(gw.url, `${[...lines, `Content-Type: ${STRUCTURED}`, `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`);
  return r!;
}

function expectProblem(r: RawResponse, status: number, code: string, field: string): void {
  expect(r.status, r.body).toBe(status);
  expect(r.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(r.body)).toMatchObject({ code, violations: [{ field }] });
}

describe('Host header lines (RFC 9112 §3.2)', () => {
  it('more than one Host line is 400 naming host, whatever the values, on /events and elsewhere', async () => {
    for (const [a, b] of [['127.0.0.1', 'evil.example'], ['127.0.0.1', '127.0.0.1'], ['localhost', '']]) {
      expectProblem(await send(['POST /events HTTP/1.1', `Host: ${a}`, `Host: ${b}`]), 400, 'CEG_MALFORMED_REQUEST', 'host');
    }
    const [r] = await rawRequest(gw.url, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nhost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expectProblem(r!, 400, 'CEG_MALFORMED_REQUEST', 'host');
  });

  it('an empty Host is 400 naming host (not 403), in HTTP/1.1 and 1.0; no Host in HTTP/1.1 is 400 too', async () => {
    for (const v of ['1.1', '1.0']) expectProblem(await send([`POST /events HTTP/${v}`, 'Host:']), 400, 'CEG_MALFORMED_REQUEST', 'host');
    expectProblem(await send(['POST /events HTTP/1.1', 'Host:   ']), 400, 'CEG_MALFORMED_REQUEST', 'host');
    expectProblem(await send(['POST /events HTTP/1.1']), 400, 'CEG_MALFORMED_REQUEST', 'host');
  });

  it('one Host line, HTTP/1.1, is served as before', async () => {
    expect((await send(['POST /events HTTP/1.1', `Host: 127.0.0.1:${port}`])).status).toBe(202);
  });
});

describe('the host of an absolute-form target (RFC 9112 §3.2.2), without authentication', () => {
  it('a foreign authority in the target is refused (403 naming target) although Host is loopback', async () => {
    for (const target of ['http://evil.example/events', `http://rebind.attacker.example:${port}/events`, 'http://127.0.0.1.nip.io/events', 'https://[::2]/events']) {
      expectProblem(await send([`POST ${target} HTTP/1.1`, 'Host: 127.0.0.1']), 403, 'CEG_FORBIDDEN', 'target');
    }
  });

  it('a loopback authority in the target is served whatever Host says (Host is ignored)', async () => {
    for (const target of [`http://127.0.0.1:${port}/events`, `http://localhost:${port}/events`, `http://[::1]:${port}/events`]) {
      expect((await send([`POST ${target} HTTP/1.1`, 'Host: evil.example'])).status, target).toBe(202);
    }
  });

  it('property: the answer follows the target authority alone (403 for a non-loopback one, 202 for a loopback one)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.domain(), fc.ipV4(), fc.constantFrom('localhost', 'app.localhost', '127.0.0.1', '127.1.2.3')), fc.constantFrom('127.0.0.1', 'localhost', 'evil.example'), async (authority, host) => {
        const r = await send([`POST http://${authority}:${port}/events HTTP/1.1`, `Host: ${host}`]);
        expect(r.status, `${authority} / ${host}: ${r.body}`).toBe(isLoopbackHostHeader(authority) ? 202 : 403);
      }),
      { numRuns: 40 },
    );
  });

  it('HTTP/1.0 without Host is for the address it connected to: served on the loopback listener', async () => {
    expect((await send(['POST /events HTTP/1.0'])).status).toBe(202);
  });
});
