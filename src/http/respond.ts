/** Writing JSON and RFC 9457 problem+json answers on plain node:http responses. */
import type { ServerResponse } from 'node:http';
import { GatewayError, errorMessage } from '../core/errors.js';
import { problemContentType, toProblem } from '../codec/http/index.js';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Answers with application/problem+json naming the attribute or field (RFC 9457).
 * A retriable failure (broker or registry unavailable, queue full) is a 503 with `Retry-After`.
 * `close`: end the connection after the answer (the request body may be unread: reading on would
 * parse the rest of it as the next request). Does nothing when an answer was already sent.
 * A 415 for a content coding carries `Accept-Encoding` (RFC 9110 §15.5.16).
 */
export function sendProblem(res: ServerResponse, err: unknown, opts: { retryAfterS: number; extra?: Record<string, unknown>; instance?: string; close?: boolean }): void {
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
