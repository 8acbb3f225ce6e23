/**
 * The HTTP server: node:http serves the hot and operational paths itself — `POST /events`,
 * `GET /healthz`, `GET /readyz`, `GET /metrics` — and hands everything else to express.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type express from 'express';
import { handleIngress } from './ingress/handler.js';
import type { IngressDeps } from './ingress/handler.js';
import { sendJson, sendProblem } from './respond.js';
import { GatewayError } from '../core/errors.js';

export interface ServerDeps {
  /** Undefined until the gateway has its topics and schemas (then `POST /events` answers 503). */
  readonly ingress: () => IngressDeps | undefined;
  readonly api: express.Express;
  /** Readiness: broker and registry reachable now. Never throws. */
  readonly ready: () => Promise<{ ready: boolean; checks: Record<string, boolean>; durable?: boolean }>;
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
  readonly retryAfterS: number;
}

/** Answers a request the HTTP parser refused before any handler ran (e.g. headers over 16 KiB). */
function onClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) return;
  const [status, title] = err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request header fields too large'] : [400, 'Bad request'];
  const body = JSON.stringify({ type: 'urn:ce-gateway:error:CEG_INVALID_EVENT', title, status, code: 'CEG_INVALID_EVENT', retriable: false, detail: status === 431 ? 'the request headers exceed 16 KiB; CloudEvents attributes are headers in binary mode — send large values as data' : 'the request could not be parsed as HTTP', violations: [{ field: 'headers', reason: title }] });
  socket.end(`HTTP/1.1 ${status} ${title}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
}

export function createHttpServer(deps: ServerDeps): Server {
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const path = url.includes('?') ? url.slice(0, url.indexOf('?')) : url;
    if (path === '/events' && req.method === 'POST') {
      const ingress = deps.ingress();
      if (ingress === undefined) {
        req.resume();
        sendProblem(res, new GatewayError('CEG_BROKER_UNAVAILABLE', 'the gateway is starting: topics and schemas are not ready yet', { retriable: true }), { retryAfterS: deps.retryAfterS });
        return;
      }
      void handleIngress(req, res, ingress);
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (req.method === 'GET' && path === '/readyz') {
      deps.ready().then(
        (r) => sendJson(res, r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not ready', checks: r.checks, ...(r.durable === false ? { durable: false, warning: 'in-memory transport or registry: nothing is durable' } : {}) }),
        () => sendJson(res, 503, { status: 'not ready' }),
      );
      return;
    }
    if (req.method === 'GET' && path === '/metrics') {
      deps.metrics().then(
        (m) => {
          res.writeHead(200, { 'content-type': m.contentType });
          res.end(m.body);
        },
        (err: unknown) => sendProblem(res, err, { retryAfterS: deps.retryAfterS }),
      );
      return;
    }
    deps.api(req, res);
  });
  server.on('clientError', onClientError);
  return server;
}
