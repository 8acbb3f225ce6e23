/**
 * The operational HTTP surface of a process that serves no API — the outbox relay (issue 15: "the
 * relay serves its own /metrics and /healthz"): `GET /metrics` (Prometheus text format),
 * `GET /healthz` (200 while the process runs and `healthy()` says so, else 503 with the reason),
 * `GET /readyz` (the same); anything else 404, other methods 405, as problem+json.
 * `serve` with `OPS_PORT` uses the same server with the API port's own answers of the three routes
 * ({@link createOpsServerAnswering}, http/server.ts `answerOperational`): plain HTTP, no partner
 * authentication, so probes and the scrape do not depend on TLS_CERT_FILE or METRICS_AUTH.
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { GatewayError } from '../core/errors.js';
import { expectationFailed, sendJson, sendProblem } from './respond.js';
import type { Logger } from '../observability/index.js';

export interface OpsServerDeps {
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
  /** Never throws; `reason` explains an unhealthy answer. */
  readonly healthy: () => { readonly ok: boolean; readonly reason?: string; readonly details?: Readonly<Record<string, unknown>> };
  /** Where an unexpected failure (a 500: `metrics()` rejecting with other than a retriable CEG_* error) is logged with its stack; absent: not logged. */
  readonly log?: Logger;
}

/** The three paths an ops server serves. */
export type OpsPath = '/metrics' | '/healthz' | '/readyz';

/**
 * Answers a GET or HEAD of one of the three paths on `res` (the method and path are checked
 * before). Must answer every call and never throw: a failure is an answer too (503, 500).
 */
export type OpsAnswer = (path: OpsPath, res: ServerResponse) => void;

/** The server (not listening yet): the three routes above, every other answer problem+json. */
export function createOpsServer(deps: OpsServerDeps): Server {
  return createOpsServerAnswering((path, res) => {
    if (path === '/metrics') {
      deps.metrics().then(
        (m) => {
          res.writeHead(200, { 'content-type': m.contentType });
          res.end(m.body);
        },
        (err: unknown) => sendProblem(res, err, { retryAfterS: 5, ...(deps.log === undefined ? {} : { log: deps.log }) }),
      );
      return;
    }
    const h = deps.healthy();
    sendJson(res, h.ok ? 200 : 503, { status: h.ok ? 'ok' : 'unhealthy', ...(h.reason === undefined ? {} : { reason: h.reason }), ...h.details });
  });
}

const isOpsPath = (path: string | undefined): path is OpsPath => path === '/metrics' || path === '/healthz' || path === '/readyz';

/**
 * The ops server (not listening yet) with the answers of `answer` on GET and HEAD of /metrics,
 * /healthz and /readyz; any other path 404, any other method 405 (`Allow: GET, HEAD`), both
 * problem+json. Plain HTTP only and no authentication: bind it where only the kubelet and the
 * scraper reach it. Headers within 10 s, a whole request within 15 s.
 */
export function createOpsServerAnswering(answer: OpsAnswer): Server {
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 15_000 }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    req.resume();
    if (!isOpsPath(path)) {
      sendProblem(res, new GatewayError('CEG_NOT_FOUND', `no route ${path ?? ''}: this port serves /metrics, /healthz and /readyz`, { retriable: false, details: { field: 'target' } }), { retryAfterS: 5 });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD');
      sendProblem(res, new GatewayError('CEG_METHOD_NOT_ALLOWED', `${req.method ?? '?'} is not allowed on ${path}`, { retriable: false, details: { allow: ['GET', 'HEAD'] } }), { retryAfterS: 5 });
      return;
    }
    answer(path, res);
  });
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    sendProblem(res, expectationFailed(req), { retryAfterS: 5 });
  });
  return server;
}
