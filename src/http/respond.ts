/** Writing JSON and RFC 9457 problem+json answers on plain node:http responses. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { GatewayError, errorMessage } from '../core/errors.js';
import { problemContentType, problemStatus, toProblem } from '../codec/http/index.js';
import type { Logger } from '../observability/index.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Longest request path written to a log line, characters. */
const MAX_LOGGED_PATH = 300;

/**
 * Logs `err` once at error level when its answer is a server error the client cannot cure by
 * waiting (status 5xx, not retriable: an unexpected failure, CEG_INTERNAL, a misconfiguration),
 * with the request's context: `method`, `path` (without the query, which may carry tokens;
 * at most 300 characters), `route` when known, `status`, `code` and `err` (pino's serializer:
 * type, message, stack, cause). docs/errors.md: CEG_INTERNAL "details are logged, not returned".
 * Client errors and retriable 503s (broker unavailable, shutting down) are not logged here: they
 * are expected, and a flood of them must not flood the log. Does nothing without `log`.
 * Returns whether it logged.
 */
export function logServerError(log: Logger | undefined, err: unknown, req: { readonly method?: string | undefined; readonly url?: string | undefined }, route?: string): boolean {
  if (log === undefined) return false;
  const ge = err instanceof GatewayError ? err : undefined;
  const status = ge === undefined ? 500 : problemStatus(ge);
  if (status < 500 || ge?.retriable === true) return false;
  const url = req.url ?? '';
  const q = url.indexOf('?');
  const path = (q === -1 ? url : url.slice(0, q)).slice(0, MAX_LOGGED_PATH);
  // The original failure (with its stack), not the CEG_INTERNAL wrapper around it.
  const cause = ge !== undefined && ge.code === 'CEG_INTERNAL' && ge.cause !== undefined ? ge.cause : err;
  log.error({ method: req.method, path, ...(route === undefined ? {} : { route }), status, code: ge?.code ?? 'CEG_INTERNAL', err: cause }, `http: ${req.method ?? '?'} ${path} failed unexpectedly (${status})`);
  return true;
}

/**
 * Answers with application/problem+json naming the attribute or field (RFC 9457).
 * A retriable failure (broker or registry unavailable, queue full) is a 503 with `Retry-After`.
 * `close`: end the connection after the answer (the request body may be unread: reading on would
 * parse the rest of it as the next request). Does nothing when an answer was already sent.
 * A 415 for a content coding carries `Accept-Encoding` (RFC 9110 §15.5.16).
 * `log`: where an unexpected failure (a 5xx that is not retriable) is logged with the request's
 * context ({@link logServerError}); callers that log it themselves leave it out.
 */
export function sendProblem(res: ServerResponse, err: unknown, opts: { retryAfterS: number; extra?: Record<string, unknown>; instance?: string; close?: boolean; log?: Logger }): void {
  if (opts.log !== undefined) logServerError(opts.log, err, res.req);
  if (res.headersSent) return;
  const ge = err instanceof GatewayError ? err : new GatewayError('CEG_INTERNAL', `internal error: ${errorMessage(err)}`, { retriable: false });
  const problem = { ...toProblem(ge, opts.instance), ...opts.extra };
  const status = problem.status;
  const text = JSON.stringify(problem);
  const headers: Record<string, string | number> = { 'content-type': problemContentType, 'content-length': Buffer.byteLength(text) };
  // A rate limit knows its own wait (details.retryAfterS); other retriable failures use the configured one.
  if (ge.retriable) headers['retry-after'] = String(typeof ge.details.retryAfterS === 'number' ? ge.details.retryAfterS : opts.retryAfterS);
  if (opts.close === true) headers.connection = 'close';
  if (ge.code === 'CEG_UNSUPPORTED_MEDIA_TYPE' && ge.details.contentEncoding !== undefined) headers['accept-encoding'] = 'gzip';
  res.writeHead(status, headers);
  res.end(text);
}

/**
 * The answer to an `Expect` other than `100-continue` (RFC 9110 §10.1.1 defines no other):
 * CEG_EXPECTATION_FAILED (417) naming the header. Node answers those itself with an empty body
 * unless a server listens for `checkExpectation`; every server of the gateway does.
 */
export function expectationFailed(req: IncomingMessage): GatewayError {
  return new GatewayError('CEG_EXPECTATION_FAILED', `Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met: only 100-continue is supported`, { retriable: false, details: { field: 'expect' } });
}
