/**
 * The API app's final error handling: whatever a route, a router or express itself throws
 * becomes an RFC 9457 problem+json answer, never a bare 500 for bad input:
 * - a GatewayError as it is (its code decides the status);
 * - a path that cannot be percent-decoded (express's router throws a URIError with `status` 400
 *   while decoding a route's parameters, before any handler runs) → 400 CEG_MALFORMED_REQUEST
 *   naming the `path` and the segment;
 * - an error of express or body-parser carrying a 4xx `status`/`statusCode` (http-errors: a body
 *   over the bound, an unknown content coding, a body cut short) → that 4xx under its code;
 * - anything else → 500 CEG_INTERNAL, logged once with the request's context and the stack, and
 *   answered without internals (docs/errors.md).
 * Spec: RFC 3986 §2.1 (percent-encoding), RFC 9110 §15.5, RFC 9457.
 */
import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import { GatewayError } from '../../core/errors.js';
import type { ErrorCode } from '../../core/errors.js';
import type { Logger } from '../../observability/index.js';
import { problemContentType, toProblem } from '../../codec/http/index.js';
import { logServerError } from '../respond.js';

/** The code of a client error by its HTTP status; other 4xx statuses become CEG_MALFORMED_REQUEST (400). */
const CODE_OF_STATUS: ReadonlyMap<number, ErrorCode> = new Map<number, ErrorCode>([
  [400, 'CEG_MALFORMED_REQUEST'],
  [403, 'CEG_FORBIDDEN'],
  [404, 'CEG_NOT_FOUND'],
  [405, 'CEG_METHOD_NOT_ALLOWED'],
  [408, 'CEG_REQUEST_TIMEOUT'],
  [409, 'CEG_CONFLICT'],
  [413, 'CEG_PAYLOAD_TOO_LARGE'],
  [414, 'CEG_URI_TOO_LONG'],
  [415, 'CEG_UNSUPPORTED_MEDIA_TYPE'],
  [431, 'CEG_HEADERS_TOO_LARGE'],
]);

/** The content codings body-parser decodes for the management routes (zstd only where Node has it, so not listed). */
const BODY_CODINGS = ['identity', 'gzip', 'deflate', 'br'] as const;

/** Longest text of the request echoed in a problem's `detail`, characters. */
const MAX_ECHO = 100;

/** The first `/`-separated segment of `path` (no query) that is not valid percent-encoding, or undefined. */
export function undecodableSegment(path: string): string | undefined {
  for (const segment of path.split('/')) {
    if (!segment.includes('%')) continue;
    try {
      decodeURIComponent(segment);
    } catch {
      return segment;
    }
  }
  return undefined;
}

/** Longest `instance` of a problem answer, characters (a path of the API is far shorter). */
export const MAX_INSTANCE_CHARS = 256;

/** Characters RFC 3986 §3.3 allows in a path (pchar and "/"), and "%" (kept, valid triplet or not: the 400 for a bad one names it). */
const NOT_PATH_CHAR = /[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]/;

/**
 * The Server-Sent Events message that ends a stream on a failure after its 200 (pull `…/stream`,
 * the console's live tail): `event: error` with the problem object of `err` as `data` (RFC 9457
 * shape, {@link toProblem}: a retriable server error says what failed, an unexpected one only that
 * it failed). `url`: the request's, for `instance`. Spec: WHATWG HTML "Server-sent events"
 * (`event`, `data` fields).
 */
export function streamErrorMessage(err: unknown, url: string): string {
  const ge = err instanceof GatewayError ? err : new GatewayError('CEG_INTERNAL', 'internal error', { retriable: false, cause: err });
  return `event: error\ndata: ${JSON.stringify(toProblem(ge, problemInstance(url)))}\n\n`;
}

/**
 * A problem's `instance` for a request to `url` (its origin-form target, `req.originalUrl`): the
 * path only — the query is never echoed, as it may carry a credential (`?access_token=`, RFC 6750
 * §2.3, which the gateway does not accept but a client may still send) or a signed cursor — with
 * every character RFC 3986 does not allow in a path percent-encoded (Node refuses controls and
 * octets ≥ 0x80 in a request line with its own 400, but lets `<>"{|}\^` and the backquote
 * through), and
 * cut to {@link MAX_INSTANCE_CHARS}, never inside a `%XX` triplet it made. An absolute-form target
 * (`GET http://host/path`) gives its path too.
 * Spec: RFC 9457 §3.1.5 (`instance`, a URI reference), RFC 3986 §3.3, §2.1.
 */
export function problemInstance(url: string): string {
  let path = url;
  const q = path.search(/[?#]/);
  if (q !== -1) path = path.slice(0, q);
  if (!path.startsWith('/')) {
    // absolute-form or asterisk-form: the path part only.
    const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*(\/.*)?$/.exec(path);
    path = m?.[1] ?? '/';
  }
  let out = '';
  for (const ch of path.slice(0, MAX_INSTANCE_CHARS)) {
    const piece = NOT_PATH_CHAR.test(ch) ? encodeChar(ch) : ch;
    if (out.length + piece.length > MAX_INSTANCE_CHARS) break;
    out += piece;
  }
  return out;
}

/** `ch` percent-encoded: a character below U+0100 as its one octet (what the wire carried), another as its UTF-8 octets. */
function encodeChar(ch: string): string {
  const code = ch.codePointAt(0)!;
  const bytes = code < 0x100 ? [code] : [...Buffer.from(ch, 'utf8')];
  return bytes.map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');
}

interface HttpErrorLike {
  readonly status?: unknown;
  readonly statusCode?: unknown;
  readonly expose?: unknown;
  readonly type?: unknown;
  readonly limit?: unknown;
  readonly message?: unknown;
  /** body-parser's unknown content coding. */
  readonly encoding?: unknown;
}

/** The 4xx status an error of express, the router or body-parser carries, else undefined. */
function clientStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as HttpErrorLike;
  const status = typeof e.status === 'number' ? e.status : e.statusCode;
  return typeof status === 'number' && Number.isInteger(status) && status >= 400 && status <= 499 ? status : undefined;
}

/**
 * What `err`, thrown while serving a request for `url` (the original URL), is as a GatewayError:
 * itself; CEG_MALFORMED_REQUEST (`field: path`) for a path the router could not percent-decode;
 * the code of a 4xx `status` for express's and body-parser's errors (`field: body` when `part` is
 * `body` or the error is body-parser's; the message only when `expose` is true; `maxBytes` for a
 * body over the bound); CEG_INTERNAL (retriable false, the error as `cause`) for anything else.
 */
export function asGatewayError(err: unknown, url: string, part?: 'body'): GatewayError {
  if (err instanceof GatewayError) return err;
  const status = clientStatus(err);
  if (status === undefined) return new GatewayError('CEG_INTERNAL', 'internal error', { retriable: false, cause: err });
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const segment = err instanceof URIError ? undecodableSegment(path) : undefined;
  if (err instanceof URIError || segment !== undefined) {
    const what = segment === undefined ? 'the path' : `the path segment "${segment.slice(0, MAX_ECHO)}"`;
    return new GatewayError('CEG_MALFORMED_REQUEST', `${what} is not valid percent-encoding: "%" must be followed by two hexadecimal digits, and the octets must be UTF-8 (RFC 3986 §2.1)`, { retriable: false, details: { field: 'path' } });
  }
  const e = err as HttpErrorLike;
  const code = CODE_OF_STATUS.get(status) ?? 'CEG_MALFORMED_REQUEST';
  const fromBody = part === 'body' || typeof e.type === 'string';
  const limit = typeof e.limit === 'number' ? e.limit : undefined;
  const message =
    code === 'CEG_PAYLOAD_TOO_LARGE' && limit !== undefined
      ? `the body exceeds ${limit} bytes`
      : e.expose === true && typeof e.message === 'string' && e.message !== ''
        ? `${fromBody ? 'the body could not be read: ' : ''}${e.message.slice(0, 200)}`
        : `the request was refused (HTTP ${status})`;
  const details: Record<string, unknown> = fromBody ? { field: 'body' } : {};
  if (code === 'CEG_PAYLOAD_TOO_LARGE' && limit !== undefined) details.maxBytes = limit;
  // As the ingress's 415 does (docs/errors.md): what it got and what is supported.
  if (e.type === 'encoding.unsupported') Object.assign(details, { contentEncoding: typeof e.encoding === 'string' ? e.encoding.slice(0, MAX_ECHO) : '', supported: [...BODY_CODINGS] });
  return new GatewayError(code, message, { retriable: false, details });
}

/** Options of {@link problemHandler}. */
export interface ProblemHandlerOptions {
  /** `Retry-After` of retriable answers without their own wait, seconds. */
  readonly retryAfterS: number;
  /** Where unexpected failures are logged (none: not logged). */
  readonly log?: Logger;
}

/**
 * The app's last error handler: answers `err` as problem+json ({@link asGatewayError}, `instance`
 * the request's path as {@link problemInstance} bounds it) and logs an unexpected failure (5xx, not retriable) once, with the method,
 * the path without its query, the route, the code and the error's stack. When the answer had
 * already begun (a stream), the failure is logged and the connection closed, as express does.
 */
export function problemHandler(opts: ProblemHandlerOptions): ErrorRequestHandler {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const ge = asGatewayError(err, req.originalUrl);
    const route: unknown = (req.route as { path?: unknown } | undefined)?.path;
    logServerError(opts.log, ge, { method: req.method, url: req.originalUrl }, typeof route === 'string' ? route : undefined);
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    const problem = toProblem(ge, problemInstance(req.originalUrl));
    if (ge.retriable) res.set('retry-after', String(typeof ge.details.retryAfterS === 'number' ? ge.details.retryAfterS : opts.retryAfterS));
    res.status(problem.status).type(problemContentType).send(JSON.stringify(problem));
  };
}
