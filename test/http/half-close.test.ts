/**
 * A client may half-close its side once it sent its requests (shutdown(SHUT_WR), `nc -N`,
 * `socket.end(request)`) and still read the answers: RFC 9112 §9.6 (closing is per direction) and
 * §9.3.2 (answers in request order). Before, node:http ended the socket on the client's FIN: the
 * event was written, its 202 never sent — an acknowledgement lost, a blind retry, a duplicate.
 * In-memory adapters, produce delayed 100 ms (a broker's round trip: the FIN arrives while the
 * write is in flight, as on Kafka), a raw TCP socket on loopback.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordCount, startGateway } from '../helpers/gateway.js';
import type { TestGateway } from '../helpers/gateway.js';
import { parseResponses } from '../helpers/raw-http.js';
import { createMemoryTransport } from '../../src/transport/memory/index.js';
import type { Transport } from '../../src/transport/port.js';
import type { RawResponse } from '../helpers/raw-http.js';
import { PRICE_TOPIC, structuredPriceEvent } from '../fixtures/events.js';
import { STRUCTURED } from './helpers.js';

/** The in-memory transport with each produce answered 100 ms later. */
function slowProduce(): Transport {
  const mem = createMemoryTransport();
  return new Proxy(mem, {
    get(target, key, receiver) {
      if (key === 'produce') {
        return async (...a: Parameters<Transport['produce']>) => {
          await new Promise((r) => setTimeout(r, 100));
          return target.produce(...a);
        };
      }
      const v: unknown = Reflect.get(target, key, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * The header and request deadlines set far beyond what a test waits (`CLOSE_WAIT_MS`): a
 * half-closed connection the server kept open would end only at one of them, so "closed at once"
 * is told apart by whether the server closed it at all within the wait, not by how fast (a loaded
 * CI machine answered in up to ~0.5 s; the wrong behaviour takes ≥ 60 s).
 */
const DEADLINES = { HTTP_HEADERS_TIMEOUT_MS: '60000', HTTP_REQUEST_TIMEOUT_MS: '120000' };
/** How long a test waits for the server to close its side. Units: ms. */
const CLOSE_WAIT_MS = 20_000;

let gw: TestGateway;
let port: number;
beforeAll(async () => {
  gw = await startGateway({ stack: false, env: DEADLINES, overrides: { transport: slowProduce() } });
  port = Number(new URL(gw.url).port);
});
afterAll(async () => {
  await gw.close();
});

/** A POST /events request as raw bytes (Content-Length from the body, or `declared`). */
function request(body: string, declared = Buffer.byteLength(body)): string {
  return `POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: ${STRUCTURED}\r\nContent-Length: ${declared}\r\n\r\n${body}`;
}

/**
 * Sends `raw` and half-closes at once (`socket.end(raw)`: the bytes, then FIN); resolves with the
 * answers once the server closed its side too, or after `timeoutMs` (`closed: false`).
 */
function sendAndHalfClose(raw: string, timeoutMs = CLOSE_WAIT_MS): Promise<{ responses: RawResponse[]; closed: boolean; ms: number }> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const chunks: Buffer[] = [];
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ responses: parseResponses(Buffer.concat(chunks)), closed, ms: performance.now() - t0 });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('end', () => done(true));
    socket.on('error', () => done(true));
    socket.once('connect', () => socket.end(raw));
  });
}

describe('a client that half-closes after its requests', () => {
  it('gets the 202 of its one event, written once, and then the server closes the connection', async () => {
    const ev = structuredPriceEvent();
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const r = await sendAndHalfClose(request(JSON.stringify(ev)));
    expect(r.responses.map((x) => x.status)).toEqual([202]);
    expect(JSON.parse(r.responses[0]!.body)).toMatchObject({ events: [{ id: ev.id, topic: PRICE_TOPIC }] });
    expect(r.closed).toBe(true);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before + 1n);
  });

  it('gets an answer for every pipelined request, in order: 202s and a refusal alike', async () => {
    const evs = [structuredPriceEvent(), structuredPriceEvent(), structuredPriceEvent()];
    const raw = [request(JSON.stringify(evs[0])), request('{"not":"an event"}'), request(JSON.stringify(evs[1])), request(JSON.stringify(evs[2]))].join('');
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const r = await sendAndHalfClose(raw);
    expect(r.responses.map((x) => x.status)).toEqual([202, 400, 202, 202]);
    expect(r.responses[1]!.headers['content-type']).toBe('application/problem+json');
    expect(r.responses.filter((x) => x.status === 202).map((x) => (JSON.parse(x.body) as { events: { id: string }[] }).events[0]!.id)).toEqual(evs.map((e) => e.id));
    expect(r.closed).toBe(true);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before + 3n);
  });

  it('a request cut by the FIN (body shorter than Content-Length) gets 400 after the answers of the ones before it, is not written, and the connection ends at once', async () => {
    const ev = structuredPriceEvent();
    const whole = JSON.stringify(structuredPriceEvent());
    const before = await recordCount(gw.gateway, PRICE_TOPIC);
    const r = await sendAndHalfClose(request(JSON.stringify(ev)) + request(whole.slice(0, 20), Buffer.byteLength(whole)));
    expect(r.responses.map((x) => x.status)).toEqual([202, 400]);
    expect(JSON.parse(r.responses[1]!.body)).toMatchObject({ code: 'CEG_MALFORMED_REQUEST', violations: [{ field: 'body' }] });
    // Closed within the wait, while the request deadline (120 s) is far off: ended by the FIN.
    expect(r.closed, `not closed within ${CLOSE_WAIT_MS} ms`).toBe(true);
    expect(await recordCount(gw.gateway, PRICE_TOPIC)).toBe(before + 1n);
  }, 2 * CLOSE_WAIT_MS);

  it('a FIN in the middle of a request head or on an idle connection closes it at once: half-closed connections are not kept open', async () => {
    for (const raw of ['', 'POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty']) {
      const r = await sendAndHalfClose(raw);
      // Closed within the wait, while the header deadline (60 s) is far off: ended by the FIN.
      expect(r.closed, `${JSON.stringify(raw)}: not closed within ${CLOSE_WAIT_MS} ms`).toBe(true);
      expect(r.responses.filter((x) => x.status < 400), JSON.stringify(raw)).toEqual([]);
    }
  }, 3 * CLOSE_WAIT_MS);
});

describe('over HTTPS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-halfclose-'));
  let tls: TestGateway;
  beforeAll(async () => {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=halfclose', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    tls = await startGateway({ stack: false, env: { TLS_CERT_FILE: join(dir, 'c.pem'), TLS_KEY_FILE: join(dir, 'k.pem') }, overrides: { transport: slowProduce() } });
  });
  afterAll(async () => {
    await tls?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a client that ends its TLS side after two requests gets both answers (TLS 1.2 and 1.3)', async () => {
    const tlsPort = Number(new URL(tls.url).port);
    for (const maxVersion of ['TLSv1.2', 'TLSv1.3'] as const) {
      const raw = request(JSON.stringify(structuredPriceEvent())) + request(JSON.stringify(structuredPriceEvent()));
      const got = await new Promise<string>((resolve) => {
        const s = tlsConnect({ port: tlsPort, host: '127.0.0.1', rejectUnauthorized: false, maxVersion });
        let o = '';
        const timer = setTimeout(() => {
          s.destroy();
          resolve(o);
        }, 5000);
        s.on('data', (d: Buffer) => (o += d.toString('latin1')));
        s.on('end', () => {
          clearTimeout(timer);
          s.destroy();
          resolve(o);
        });
        s.on('error', () => undefined);
        s.on('secureConnect', () => s.end(raw));
      });
      expect(parseResponses(Buffer.from(got, 'latin1')).map((x) => x.status), maxVersion).toEqual([202, 202]);
    }
  });
});
