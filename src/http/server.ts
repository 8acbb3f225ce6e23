/**
 * The HTTP server: node:http serves the hot and operational paths itself — `POST /events`,
 * `GET /healthz`, `GET /readyz`, `GET /metrics` — and hands everything else to express.
 * HTTP semantics kept here, once for every route: answers on a connection belong to their
 * requests and come in order (a malformed later request is answered after the earlier ones);
 * absolute-form targets; 405 with `Allow`; `Expect: 100-continue` checked against the body bound;
 * CONNECT answered; timeouts for headers and whole requests (408) and a bound on connections; a
 * client that half-closes after its requests still gets their answers.
 * Spec: RFC 9112 §3.2.2 (absolute-form), §9.3.2 (pipelining: responses in request order), §9.6
 * (half-close), §3.2
 * (Host required in HTTP/1.1); RFC 9110 §15.5.6 (405 + Allow), §10.1.1 (Expect), §9.3.6 (CONNECT).
 */
import { STATUS_CODES, createServer, maxHeaderSize } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type express from 'express';
import { GatewayError, errorMessage } from '../core/errors.js';
import { isLoopbackHost, isLoopbackHostHeader } from '../core/loopback.js';
import type { ErrorCode } from '../core/errors.js';
import { toProblem, problemContentType } from '../codec/http/index.js';
import type { Logger } from '../observability/index.js';
import { silentLogger } from '../observability/index.js';
import { ANONYMOUS, Access, attachAccess } from './auth/index.js';
import type { AuthStep, HttpAuth } from './auth/index.js';
import { handleIngress } from './ingress/handler.js';
import type { IngressDeps } from './ingress/handler.js';
import type { GatewayMetrics } from '../observability/metrics.js';
import { routeOf } from '../observability/metrics.js';
import type { HttpRoute } from '../observability/metrics.js';
import { HttpDrain } from './drain.js';
import { RefusalLog } from './refusals.js';
import type { RefusedBy } from './refusals.js';
import { canonicalAddress, clientAddressOf } from './auth/client-address.js';
import { readTlsPair, reloadOnChange } from './tls.js';
import type { TlsFiles } from './tls.js';
import { expectationFailed, sendJson, sendProblem } from './respond.js';
import type { OpsPath } from './ops-server.js';

/** Timeouts (ms) and bounds of the server; see the README's configuration table. */
export interface HttpServerOptions {
  /** Time to receive a request's headers, ms. */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request, body included, ms. */
  readonly requestTimeoutMs: number;
  /** Open connections at most; more are closed at once. */
  readonly maxConnections: number;
  /** Largest request body, bytes (an `Expect: 100-continue` request declaring more gets 413 without 100 Continue). */
  readonly maxBodyBytes: number;
  /**
   * Largest body an API route (express: every path but `/events` and the operational ones) takes,
   * bytes, when more than `maxBodyBytes` (the replay route's, api/app.ts MAX_API_BODY_BYTES): an
   * `Expect: 100-continue` request to such a path is checked against the larger of the two, and
   * the route then holds it to its own bound before reading (body-parser checks Content-Length
   * first). Default: `maxBodyBytes` for every path.
   */
  readonly maxApiBodyBytes?: number;
}

export const DEFAULT_HTTP_SERVER_OPTIONS: HttpServerOptions = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 1024, maxBodyBytes: 1_048_576 });

/**
 * Header lines Node's parser keeps (its `maxHeadersCount`); it silently drops the lines past it, so
 * a request that reaches it is refused (431) rather than checked on a part of its headers.
 */
export const MAX_HEADER_LINES = 2000;

export interface ServerDeps {
  /** Undefined until the gateway has its topics and schemas (then `POST /events` answers 503). */
  readonly ingress: () => IngressDeps | undefined;
  readonly api: express.Express;
  /** Readiness: broker and registry reachable now. Never throws. */
  readonly ready: () => Promise<{ ready: boolean; checks: Record<string, boolean>; durable?: boolean }>;
  readonly metrics: () => Promise<{ contentType: string; body: string }>;
  readonly retryAfterS: number;
  readonly http?: Partial<HttpServerOptions>;
  readonly log?: Logger;
  /** Where HTTP requests and refusals are counted (issue 15); none = not counted. */
  readonly instruments?: Pick<GatewayMetrics, 'httpRequest' | 'refusal'>;
  /** The shutdown state (gateway close drains through it); default one of its own. */
  readonly drain?: HttpDrain;
  /**
   * Authentication and limits (issue 11), run before every route but the public ones; undefined =
   * none (every request is the anonymous caller, as with `AUTH=none`).
   */
  readonly auth?: HttpAuth;
  /** HTTPS with these PEM files, reloaded when they change; undefined = plain HTTP. */
  readonly tls?: TlsFiles;
}

/**
 * The routes node:http serves itself (ahead of express), for the OpenAPI route check: method and
 * path in OpenAPI form.
 */
export const SERVER_ROUTES: readonly { readonly method: string; readonly path: string }[] = Object.freeze([
  { method: 'post', path: '/events' },
  { method: 'get', path: '/healthz' },
  { method: 'get', path: '/readyz' },
  { method: 'get', path: '/metrics' },
]);

const EVENTS_ALLOW = 'POST';
const READ_ALLOW = 'GET, HEAD';
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** A whole HTTP/1.1 answer with a problem+json body, for writing on a socket that has no response object. */
function rawProblem(code: ErrorCode, message: string, details: Record<string, unknown> = {}, headers: Record<string, string> = {}): { status: number; text: string } {
  const problem = toProblem(new GatewayError(code, message, { retriable: false, details }));
  const body = JSON.stringify(problem);
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return {
    status: problem.status,
    text: `HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status] ?? 'Error'}\r\nContent-Type: ${problemContentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  };
}

/** `POST /events` in the request line of the bytes the parser saw (where binary mode applies). */
const INGRESS_REQUEST_LINE = /^POST +(?:[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/ ]*)?\/events(?:[?# ]|$)/;

/**
 * The start of a request line: a method (upper-case, as every registered one) and SP, then a
 * target in origin-form (`/`), absolute-form (`scheme://`) or asterisk-form (`*`) (RFC 9112 §3.2).
 * Stricter than the grammar's token on purpose: the continuation of a long header value in a later
 * read ("Mozilla compat …", "EUR USD …") must not pass for a request's start.
 */
const REQUEST_LINE_START = /^[A-Z][A-Z_-]{0,31} +(?:\/|\*|[A-Za-z][A-Za-z0-9+.-]*:\/\/)/;

/**
 * True when Node's parser refused the request head (HPE_HEADER_OVERFLOW) on its request line: the
 * request line alone (method, target, version) reached the bound, which is 414 URI Too Long
 * (RFC 9110 §15.5.15), not 431. The parser counts the request line and the header fields against
 * one bound (`maxHeaderSize`, 16 KiB) and stops where it noticed, in the read it was parsing
 * (`packet`, offset `at` = the error's `bytesParsed`):
 * - a read that begins the request ({@link REQUEST_LINE_START}) and holds no line end before that
 *   offset, or whose first line with its CRLF is longer than the bound: the request line crossed it;
 * - a read that holds the end of a long target: the span that crossed the bound ends at the SP
 *   before the HTTP version (a header name ends at its colon, a value at its line end).
 * A read that shows neither (the middle of a long target or of a long header value, when the head
 * arrives in several reads) is not told apart: false (431).
 */
export function requestLineOverflowed(packet: Buffer | undefined, at: number | undefined): boolean {
  if (packet === undefined) return false;
  const end = at === undefined || at < 0 || at > packet.length ? packet.length : at;
  if (REQUEST_LINE_START.test(packet.subarray(0, 512).toString('latin1'))) {
    const lineEnd = packet.indexOf(0x0a);
    // Not ended where the parser stopped, or longer than the bound with its CRLF (the parser then
    // notices on the next line: a request line of 16,384 bytes and one Host line was 431).
    if (lineEnd < 0 || lineEnd >= end || lineEnd + 1 > maxHeaderSize) return true;
  }
  return end < packet.length && packet[end] === 0x20 && packet.subarray(end + 1, end + 6).toString('latin1') === 'HTTP/';
}

/** Node's bound on the request head (request line and headers), in KiB as the answers name it. */
const headKiB = (): number => Math.round(maxHeaderSize / 1024);

/** The answer to a request the HTTP parser refused before any handler ran. */
function clientErrorAnswer(err: Error & { code?: string; rawPacket?: Buffer; bytesParsed?: number }): { status: number; text: string; code: string } {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW': {
      if (requestLineOverflowed(err.rawPacket, err.bytesParsed)) {
        return { ...rawProblem('CEG_URI_TOO_LONG', `the request target (path and query) exceeds ${headKiB()} KiB: send long values in a body`, { field: 'target', max: maxHeaderSize }), code: 'CEG_URI_TOO_LONG' };
      }
      // Only the ingress takes attributes as headers: other routes get no binary-mode advice. The
      // parser hands over its last chunk only, so when that lacks the request line the advice says where it applies.
      const head = err.rawPacket?.subarray(0, 512).toString('latin1') ?? '';
      const detail = INGRESS_REQUEST_LINE.test(head)
        ? `the request headers exceed ${headKiB()} KiB; CloudEvents attributes are headers in binary mode — send large values as data`
        : REQUEST_LINE_START.test(head)
          ? `the request headers exceed ${headKiB()} KiB`
          : `the request headers exceed ${headKiB()} KiB (on POST /events, binary-mode CloudEvents attributes are headers: send large values as data)`;
      return { ...rawProblem('CEG_HEADERS_TOO_LARGE', detail, { field: 'headers' }), code: 'CEG_HEADERS_TOO_LARGE' };
    }
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { ...rawProblem('CEG_REQUEST_TIMEOUT', 'the request did not arrive in time (headers or body too slow)', { field: 'headers' }), code: 'CEG_REQUEST_TIMEOUT' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH': {
      const framing = framingAnswer(err.rawPacket, err.code === 'HPE_INVALID_TRANSFER_ENCODING');
      if (framing !== undefined) return framing;
      return { ...rawProblem('CEG_MALFORMED_REQUEST', `the request could not be parsed as HTTP/1.1 (${err.code})`, { field: 'headers' }), code: 'CEG_MALFORMED_REQUEST' };
    }
    default:
      return { ...rawProblem('CEG_MALFORMED_REQUEST', `the request could not be parsed as HTTP/1.1 (${err.code ?? 'parse error'})`, { field: 'headers' }), code: 'CEG_MALFORMED_REQUEST' };
  }
}

/**
 * The parser refused the request's framing. Content-Length and Transfer-Encoding together, or
 * `chunked` applied twice, are malformed (400: a request-smuggling shape, RFC 9112 §6.1 and §6.3);
 * a transfer coding the gateway does not implement is 501, naming it (RFC 9112 §6.1). Undefined
 * when the head shows neither and the parser did not refuse the Transfer-Encoding itself.
 */
function framingAnswer(packet: Buffer | undefined, transferEncodingRefused: boolean): { status: number; text: string; code: string } | undefined {
  const head = packet?.subarray(0, 16_384).toString('latin1') ?? '';
  const end = head.indexOf('\r\n\r\n');
  const lines = (end === -1 ? head : head.slice(0, end)).split('\r\n').slice(1);
  const values = (name: string): string[] => lines.filter((l) => l.slice(0, name.length + 1).toLowerCase() === `${name}:`).map((l) => l.slice(name.length + 1).trim());
  const codings = values('transfer-encoding').flatMap((v) => v.split(',')).map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
  if (values('content-length').length > 0 && codings.length > 0) {
    return { ...rawProblem('CEG_MALFORMED_REQUEST', 'the request has both Content-Length and Transfer-Encoding: send one of them (RFC 9112 §6.3)', { field: 'headers' }), code: 'CEG_MALFORMED_REQUEST' };
  }
  if (codings.filter((c) => c === 'chunked').length > 1) {
    return { ...rawProblem('CEG_MALFORMED_REQUEST', 'chunked is applied more than once in Transfer-Encoding (RFC 9112 §7.1)', { field: 'headers' }), code: 'CEG_MALFORMED_REQUEST' };
  }
  if (!transferEncodingRefused) return undefined;
  // Named as body.ts names the codings the parser lets through (`gzip, chunked`): the header's value.
  const te = values('transfer-encoding').join(', ').slice(0, 100).replace(/[^\x20-\x7e]/g, '?');
  return { ...rawProblem('CEG_NOT_IMPLEMENTED', `transfer coding "${te}" is not implemented: send the body as is (Content-Length) or chunked`, { field: 'headers', transferEncoding: te, supported: ['chunked'] }), code: 'CEG_NOT_IMPLEMENTED' };
}

/**
 * Why the request's `Host` cannot be taken, or undefined. RFC 9112 §3.2: a server MUST answer 400
 * to an HTTP/1.1 request without Host, and to any request with more than one Host field line or
 * an invalid Host value — an empty one here: every target of this server is an `http`/`https` URI,
 * whose authority is never empty (RFC 9110 §4.2.1, §4.2.2). HTTP/1.0 may leave Host out.
 */
export function hostHeaderFault(req: Pick<IncomingMessage, 'httpVersion' | 'rawHeaders'>): string | undefined {
  const values: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') values.push(req.rawHeaders[i + 1]!);
  if (values.length > 1) return `the request has ${values.length} Host header lines: send exactly one (RFC 9112 §3.2)`;
  if (values.length === 1 && values[0]!.trim() === '') return 'the Host header is empty: it must name the host (and port) the request is for (RFC 9112 §3.2, RFC 9110 §7.2)';
  if (values.length === 0 && req.httpVersion !== '1.0' && req.httpVersion !== '0.9') return 'an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)';
  return undefined;
}

/**
 * Whether the request is for a loopback host, and where that was read (the problem's `field`).
 * RFC 9112 §3.2.2: with an absolute-form target the server MUST use the target's authority and
 * ignore Host — so `POST http://evil.example/events` with `Host: 127.0.0.1` is for evil.example.
 * Otherwise the Host header (RFC 9110 §7.2). An HTTP/1.0 request without Host names no host: it is
 * taken as being for the address it connected to (the socket's local address; a gateway without
 * authentication listens on loopback only, so it is served there). Browsers always send Host, so a
 * DNS-rebinding page never takes that path.
 */
export function requestAuthority(req: Pick<IncomingMessage, 'url' | 'headers' | 'socket'>): { loopback: boolean; field: 'host' | 'target' } {
  const url = req.url ?? '';
  if (!url.startsWith('/') && ABSOLUTE_FORM.test(url)) {
    let host: string | undefined;
    try {
      host = new URL(url).host;
    } catch {
      host = undefined;
    }
    return { loopback: host !== undefined && host !== '' && isLoopbackHostHeader(host), field: 'target' };
  }
  const host = req.headers.host;
  if (host !== undefined) return { loopback: isLoopbackHostHeader(host), field: 'host' };
  const local = (req.socket as { localAddress?: string } | null)?.localAddress;
  const address = local === undefined ? undefined : canonicalAddress(local);
  return { loopback: address !== undefined && isLoopbackHost(address), field: 'host' };
}

/** The request target in origin-form (`/path?query`), also for an absolute-form target (RFC 9112 §3.2.2). */
function originForm(url: string): string | undefined {
  if (url.startsWith('/')) return url;
  if (!ABSOLUTE_FORM.test(url)) return undefined;
  try {
    const u = new URL(url);
    return u.pathname + u.search;
  } catch {
    return undefined;
  }
}

/**
 * The server (not listening yet): HTTPS when `deps.tls` is set, else HTTP.
 * Errors: CEG_INVALID_OPTIONS when the TLS files cannot be read or do not match.
 */
export function createHttpServer(deps: ServerDeps): Server {
  const o: HttpServerOptions = { ...DEFAULT_HTTP_SERVER_OPTIONS, ...deps.http };
  const refusals = new RefusalLog(deps.log ?? silentLogger(), undefined, deps.instruments);
  const drain = deps.drain ?? new HttpDrain();
  const instruments = deps.instruments;
  // Responses in progress per connection: a parse error of a later pipelined request is answered
  // only after them (writing on the socket at once would put the wrong answer first).
  const inProgress = new WeakMap<Duplex, Map<ServerResponse, IncomingMessage>>();
  const afterInProgress = new WeakMap<Duplex, () => void>();

  const track = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    let set = inProgress.get(socket);
    if (set === undefined) inProgress.set(socket, (set = new Map<ServerResponse, IncomingMessage>()));
    set.set(res, req);
    const done = (): void => {
      if (!set.delete(res) || set.size > 0) return;
      const next = afterInProgress.get(socket);
      afterInProgress.delete(socket);
      next?.();
    };
    res.once('finish', done);
    res.once('close', done);
  };

  // Refusals are counted under the client address the failed-authentication limit uses (behind
  // TRUSTED_PROXIES the forwarded client, not the proxy) and, once authenticated, the partner's id.
  const clientOf = deps.auth === undefined ? clientAddressOf(undefined) : deps.auth.clientAddress.bind(deps.auth);
  const refusedBy = (req: IncomingMessage, access?: Access | string): RefusedBy => {
    const partner = typeof access === 'string' ? access : access?.partner.id;
    return { client: clientOf(req), ...(partner !== undefined && deps.auth?.enabled === true ? { partner } : {}) };
  };
  const socketClient = (socket: Duplex): RefusedBy => {
    // No request was parsed: only the TCP peer is known.
    const raw = (socket as { remoteAddress?: string }).remoteAddress;
    return raw === undefined ? {} : { client: canonicalAddress(raw) ?? raw };
  };

  /** `access`: the request's, or the id of the partner a refused authentication named. */
  const refuse = (res: ServerResponse, err: GatewayError, headers: Record<string, string> = {}, access?: Access | string): void => {
    refusals.count(`${toProblem(err).status} ${err.code}`, refusedBy(res.req, access));
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    sendProblem(res, err, { retryAfterS: deps.retryAfterS, close: true });
  };

  /** Counts the answer (route from a fixed list, method, status, seconds) once it is sent. */
  const measure = (req: IncomingMessage, res: ServerResponse): { route: HttpRoute } => {
    const at = { route: 'other' as HttpRoute };
    if (instruments === undefined) return at;
    const t0 = performance.now();
    res.once('finish', () => instruments.httpRequest(at.route, req.method, res.statusCode, (performance.now() - t0) / 1000));
    return at;
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    track(req, res);
    drain.track(res);
    const measured = measure(req, res);
    // Draining: this answer ends its connection, so keep-alive clients go elsewhere (issue 15).
    if (drain.draining) res.setHeader('connection', 'close');
    if (req.rawHeaders.length >= MAX_HEADER_LINES * 2) {
      req.resume();
      refuse(res, new GatewayError('CEG_HEADERS_TOO_LARGE', `the request has ${MAX_HEADER_LINES} header lines or more; lines past ${MAX_HEADER_LINES} would be dropped unseen, so it is refused`, { retriable: false, details: { field: 'headers', max: MAX_HEADER_LINES - 1 } }));
      return;
    }
    const hostFault = hostHeaderFault(req);
    if (hostFault !== undefined) {
      req.resume();
      refuse(res, new GatewayError('CEG_MALFORMED_REQUEST', hostFault, { retriable: false, details: { field: 'host' } }));
      return;
    }
    // Answers are JSON, problem+json, text or the console's own types: never to be sniffed into
    // HTML by a browser that got here (an error repeats a path the caller chose).
    res.setHeader('x-content-type-options', 'nosniff');
    // Without authentication the loopback bind is the only protection: a web page whose name was
    // rebound to 127.0.0.1 (DNS rebinding) would otherwise be same-origin with the gateway and
    // drive the API as the anonymous admin. So only requests for a loopback host are served then.
    if (deps.auth === undefined || !deps.auth.enabled) {
      const named = requestAuthority(req);
      if (!named.loopback) {
        req.resume();
        refuse(res, new GatewayError('CEG_FORBIDDEN', `authentication is off (no PARTNERS_FILE): only requests for a loopback host (localhost, 127.0.0.1, [::1]) are served; a page whose name resolves here (DNS rebinding) is refused${named.field === 'target' ? ' (an absolute-form target names the host: Host is ignored, RFC 9112 §3.2.2)' : ''}`, { retriable: false, details: { field: named.field } }));
        return;
      }
    }
    if ((req.url ?? '').includes('#')) {
      // RFC 9112 §3.2: no form of request-target has a fragment (RFC 9110 §7.1: a client strips it).
      req.resume();
      refuse(res, new GatewayError('CEG_MALFORMED_REQUEST', 'the request target has a fragment (#…): a request-target never carries one (RFC 9112 §3.2); leave it out', { retriable: false, details: { field: 'target' } }));
      return;
    }
    const target = originForm(req.url ?? '/');
    if (target === undefined) {
      req.resume();
      refuse(res, new GatewayError('CEG_MALFORMED_REQUEST', 'the request target must be a path (origin-form) or an absolute URI (absolute-form)', { retriable: false, details: { field: 'target' } }));
      return;
    }
    req.url = target; // express and the routes below see origin-form only
    const q = target.indexOf('?');
    const path = q === -1 ? target : target.slice(0, q);
    measured.route = routeOf(path);
    // Draining: health, readiness and metrics still answer (readiness says 503); nothing new starts.
    if (drain.draining && path !== '/healthz' && path !== '/readyz' && path !== '/metrics') {
      req.resume();
      sendProblem(res, new GatewayError('CEG_CLOSED', 'the gateway is shutting down: send the request to another instance', { retriable: true }), { retryAfterS: deps.retryAfterS, close: true });
      return;
    }
    const arrivedAtMs = performance.now();
    // Authentication before any route (issue 11): a caller without a valid key learns nothing,
    // not even whether a path exists. An OIDC token is checked asynchronously (JWKS).
    if (deps.auth === undefined) {
      dispatch(req, res, path, new Access(ANONYMOUS, deps.log ?? silentLogger()), arrivedAtMs);
      return;
    }
    if (deps.auth.isPublic(path)) {
      dispatch(req, res, path, undefined, arrivedAtMs);
      return;
    }
    const proceed = (step: AuthStep): void => {
      for (const [k, v] of Object.entries(step.headers)) res.setHeader(k, v);
      if (!step.ok) {
        req.resume();
        refuse(res, step.error, {}, step.partner);
        return;
      }
      dispatch(req, res, path, step.access, arrivedAtMs);
    };
    const step = deps.auth.check(req, path);
    if (step instanceof Promise) {
      step.then(proceed, (err: unknown) => {
        req.resume();
        deps.log?.error({ err: errorMessage(err) }, 'http: authentication failed unexpectedly');
        sendProblem(res, err, { retryAfterS: deps.retryAfterS, close: true });
      });
      return;
    }
    proceed(step);
  };

  /** Routes an authenticated (or public) request. */
  const dispatch = (req: IncomingMessage, res: ServerResponse, path: string, access: Access | undefined, arrivedAtMs: number): void => {
    if (access !== undefined) attachAccess(req, access);
    if (path === '/events') {
      if (req.method !== 'POST') {
        req.resume();
        refuse(res, new GatewayError('CEG_METHOD_NOT_ALLOWED', `${req.method ?? '?'} is not allowed on /events; send events with POST`, { retriable: false, details: { allow: [EVENTS_ALLOW] } }), { allow: EVENTS_ALLOW }, access);
        return;
      }
      const ingress = deps.ingress();
      if (ingress === undefined) {
        req.resume();
        sendProblem(res, new GatewayError('CEG_BROKER_UNAVAILABLE', 'the gateway is starting: topics and schemas are not ready yet', { retriable: true }), { retryAfterS: deps.retryAfterS });
        return;
      }
      const admission = access === undefined ? undefined : deps.auth?.ingress(access);
      // handleIngress answers its own failures; one that escapes (its error answer failed) is logged
      // and the connection closed, so the client is not left waiting and the process does not
      // end on an unhandled rejection.
      handleIngress(req, res, ingress, { arrivedAtMs, requestTimeoutMs: o.requestTimeoutMs, refusals, refusedBy: refusedBy(req, access), shutdown: drain.signal, ...(admission === undefined ? {} : { admission }) }).catch((err: unknown) => {
        deps.log?.error({ path, err: errorMessage(err) }, 'ingress: request failed unexpectedly; connection closed');
        if (!res.writableEnded) res.destroy();
      });
      return;
    }
    // Health, readiness and metrics answer GET and HEAD (RFC 9110 §9.3.2: node:http leaves out
    // a HEAD answer's body); any other method is 405 naming them, as the ops server does.
    if (path === '/healthz' || path === '/readyz' || path === '/metrics') {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        req.resume();
        refuse(res, new GatewayError('CEG_METHOD_NOT_ALLOWED', `${req.method ?? '?'} is not allowed on ${path}; use GET or HEAD`, { retriable: false, details: { allow: READ_ALLOW.split(', ') } }), { allow: READ_ALLOW }, access);
        return;
      }
    }
    if (path === '/healthz' || path === '/readyz' || path === '/metrics') {
      answerOperational(path, res, { ...deps, drain });
      return;
    }
    deps.api(req, res);
  };

  // Our own check of the request time (handler/readBody) answers 408 with a problem; Node's is
  // the backstop a little later, for requests whose headers never complete.
  const httpOptions = { headersTimeout: o.headersTimeoutMs, requestTimeout: o.requestTimeoutMs + 1000, connectionsCheckingInterval: 500, requireHostHeader: false };
  let server: Server;
  if (deps.tls === undefined) server = createServer(httpOptions, onRequest);
  else {
    const pair = readTlsPair(deps.tls);
    const https = createHttpsServer({ ...httpOptions, cert: pair.cert, key: pair.key, allowHalfOpen: true }, onRequest);
    // Told against the files as read here: a rotation landing right after is installed too.
    reloadOnChange(https, deps.tls, pair.stats, deps.log ?? silentLogger());
    // An https.Server is an http.Server with TLS in front (same request events and methods).
    server = https;
  }
  server.maxHeadersCount = MAX_HEADER_LINES;
  server.maxConnections = o.maxConnections;
  // A client may half-close its side once it sent its requests and still read the answers (RFC
  // 9112 §9.6, §9.3.2): without this node:http ends the socket on the client's FIN and the answers
  // of requests already taken — an event already written, say — are lost. With it, node answers
  // the requests it has, then ends the connection (lib/_http_server.js socketOnEnd); a FIN on an
  // idle connection still ends it at once, and the header, request and handler deadlines still
  // bound a half-closed one. A GET or HEAD in progress (an SSE stream, a long-poll, the console's
  // tail: no side effect, possibly endless) takes the FIN as the client leaving, as before.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on(deps.tls === undefined ? 'connection' : 'secureConnection', (socket: Duplex) => {
    socket.once('end', () => {
      const open = inProgress.get(socket);
      if (open !== undefined && [...open.values()].some((req) => req.method === 'GET' || req.method === 'HEAD')) socket.end();
    });
  });

  // Expect: 100-continue — a body declared over the bound is refused before the client sends it;
  // otherwise 100 Continue goes out when a route first reads the body, so authentication, a
  // partner's smaller body limit and every other refusal come first, without inviting the upload.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const declared = Number(req.headers['content-length']);
    const target = originForm(req.url ?? '/');
    const path = target === undefined ? undefined : target.split('?', 1)[0];
    const api = path !== undefined && path !== '/events' && path !== '/healthz' && path !== '/readyz' && path !== '/metrics';
    const bound = api ? Math.max(o.maxBodyBytes, o.maxApiBodyBytes ?? 0) : o.maxBodyBytes;
    if (Number.isFinite(declared) && declared > bound) {
      track(req, res);
      refuse(res, new GatewayError('CEG_PAYLOAD_TOO_LARGE', `the declared body of ${declared} bytes exceeds ${bound} bytes; not sending 100 Continue`, { retriable: false, details: { field: 'body', maxBytes: bound } }));
      return;
    }
    continueOnFirstRead(req, res);
    onRequest(req, res);
  });

  // Any other Expect (RFC 9110 §10.1.1: only 100-continue is defined): 417 as problem+json, not
  // Node's bare 417 with an empty body.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    track(req, res);
    refuse(res, expectationFailed(req));
  });

  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    refusals.count('405 CEG_METHOD_NOT_ALLOWED', refusedBy(_req));
    const answer = rawProblem('CEG_METHOD_NOT_ALLOWED', 'CONNECT is not served: this is not a proxy', { allow: ['GET', 'POST'] }, { Allow: 'GET, POST' });
    if (socket.writable) socket.end(answer.text);
    else socket.destroy();
  });

  server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    const open = inProgress.get(socket);
    const busy = open !== undefined && open.size > 0;
    if (err.code === 'HPE_INVALID_EOF_STATE' && busy && socket.writable) {
      // The client half-closed in the middle of a request (RFC 9112 §9.6): the requests before it
      // are still answered, in order. A body cut short gets its 400 after them; a head cut short
      // is no request and gets nothing. Then the connection ends.
      const cut = [...open].find(([, req]) => !req.complete);
      if (cut === undefined) {
        afterInProgress.set(socket, () => socket.destroy());
        return;
      }
      const [res, req] = cut;
      // Counted as a hang-up: a client that closed both sides looks the same until it resets.
      refusals.count('aborted', socketClient(socket));
      req.resume();
      sendProblem(res, new GatewayError('CEG_MALFORMED_REQUEST', 'the client closed its side before the request body was complete (shorter than its Content-Length, or no last chunk)', { retriable: false, details: { field: 'body' } }), { retryAfterS: deps.retryAfterS, close: true });
      res.once('finish', () => socket.destroy());
      return;
    }
    if (err.code === 'ECONNRESET' || err.code === 'EPIPE' || err.code === 'HPE_INVALID_EOF_STATE' || !socket.writable) {
      // The client hung up. A request in progress on it counts its own abort.
      if (!busy) refusals.count('aborted', socketClient(socket));
      socket.destroy();
      return;
    }
    const answer = clientErrorAnswer(err);
    refusals.count(`${answer.status} ${answer.code}`, socketClient(socket));
    const broken = busy ? [...open].find(([, req]) => !req.complete) : undefined;
    if (broken !== undefined) {
      // The fault is in the body of the request being answered (a bad chunk, say): answer it there.
      const [res, req] = broken;
      req.resume();
      sendProblem(res, new GatewayError(answer.code as ErrorCode, `the request body could not be parsed as HTTP/1.1 (${err.code ?? 'parse error'})`, { retriable: false, details: { field: 'body' } }), { retryAfterS: deps.retryAfterS, close: true });
      res.once('finish', () => socket.destroy());
      return;
    }
    if (busy) {
      // A request on this connection is still being answered: answer this one after it, in order.
      afterInProgress.set(socket, () => {
        if (socket.writable) socket.end(answer.text);
        else socket.destroy();
      });
      return;
    }
    socket.end(answer.text);
  });
  server.on('close', () => refusals.flush());
  return server;
}

/** What {@link answerOperational} answers from: the server's readiness, metrics and shutdown state. */
export type OperationalDeps = Pick<ServerDeps, 'ready' | 'metrics' | 'retryAfterS' | 'log'> & { readonly drain: HttpDrain };

/**
 * The answers of GET (or HEAD) /healthz, /readyz and /metrics, one implementation for the API
 * port and `serve`'s ops port (OPS_PORT, app/gateway.ts), so both say the same: /healthz 200 while
 * the process runs; /readyz 200 when ready and not draining, else 503 naming the failed checks (or
 * `shutting down`); /metrics the rendered text format, or a problem (503 for a retriable CEG_*
 * failure, else 500, logged with its stack). Method and authentication are the caller's to check.
 * Never throws.
 */
export function answerOperational(path: OpsPath, res: ServerResponse, deps: OperationalDeps): void {
  if (path === '/healthz') {
    sendJson(res, 200, { status: 'ok' });
    return;
  }
  if (path === '/readyz') {
    deps.ready().then(
      (r) => sendJson(res, r.ready && !deps.drain.draining ? 200 : 503, { status: deps.drain.draining ? 'shutting down' : r.ready ? 'ready' : 'not ready', checks: r.checks, ...(r.durable === false ? { durable: false, warning: 'in-memory transport or registry: nothing is durable' } : {}) }),
      () => sendJson(res, 503, { status: 'not ready' }),
    );
    return;
  }
  deps.metrics().then(
    (m) => {
      res.writeHead(200, { 'content-type': m.contentType });
      res.end(m.body);
    },
    // An unexpected failure (not a retriable CEG_* one) is a 500 and logged with its stack.
    (err: unknown) => sendProblem(res, err, { retryAfterS: deps.retryAfterS, ...(deps.log === undefined ? {} : { log: deps.log }) }),
  );
}

/**
 * Sends `100 Continue` (RFC 9110 §10.1.1) when the body is first read — by any reader: the
 * ingress, express's body parsers, a drain — and only while no final answer has gone out. A
 * refusal sent before that goes without it, and Node then closes the connection after the answer
 * (the client's body, if it sends one anyway, is not taken for the next request).
 */
function continueOnFirstRead(req: IncomingMessage, res: ServerResponse): void {
  const read = req._read.bind(req);
  req._read = (size: number): void => {
    req._read = read;
    if (!res.headersSent && !res.writableEnded) res.writeContinue();
    read(size);
  };
}
