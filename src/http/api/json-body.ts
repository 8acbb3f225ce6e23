/**
 * JSON request bodies of the management API (subscriptions, their PATCH, replay, cursor commits,
 * dead-letter redrive and purge), read with the ingress's JSON reader (`parseJsonText`): UTF-8
 * checked (never replaced), a leading BOM ignored, and a member name twice in one object refused —
 * a proxy that checks the first `delivery.url` must see the URL the gateway stores. express
 * (body-parser `raw`) only reads the bytes: the bound, the content coding (`gzip`, `deflate`…), the
 * media type; nothing is parsed twice.
 * Errors reach the app's error handler: CEG_MALFORMED_REQUEST naming the `body` (not JSON, not
 * UTF-8, not an object or array) or the duplicate member by its JSON pointer (`/delivery/url`);
 * CEG_UNSUPPORTED_MEDIA_TYPE for a `charset` other than UTF-8; body-parser's own (too large, an
 * unknown content coding, broken gzip) as 4xx GatewayErrors naming the `body` (`./errors.ts`).
 * Spec: RFC 8259 §4 (member names SHOULD be unique), §8.1 (JSON exchanged between systems is
 * UTF-8); RFC 9457.
 */
import type { IncomingMessage } from 'node:http';
import express from 'express';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { GatewayError } from '../../core/errors.js';
import { parseJsonText } from '../../codec/json/index.js';
import { isMediaTypeFault, mediaTypeProblem, parseMediaType, readMediaType } from '../../envelope/index.js';
import { asGatewayError } from './errors.js';

const EMPTY_BODY = 'ceGatewayEmptyJsonBody';

/** Whether {@link jsonBody} read an empty body (0 bytes) as `{}` for this request. */
export function isEmptyBody(res: Response): boolean {
  return res.locals[EMPTY_BODY] === true;
}

/** Options of {@link jsonBody}. */
export interface JsonBodyOptions {
  /** Largest body, bytes (after decoding a content coding). */
  readonly limit: number;
  /** The media types read (body-parser's `type`: a type, a list, or a test); other requests pass with `req.body` untouched. */
  readonly type: string | string[] | ((req: IncomingMessage) => boolean);
}

/**
 * The body's bytes → its JSON value, as the ingress reads JSON text. An empty body is `{}` (as
 * express.json answered it: the routes then name the missing fields). Only an object or an array
 * is a body (express.json's `strict`).
 * Errors: CEG_MALFORMED_REQUEST (retriable false) with `details.field` the JSON pointer of a
 * duplicate member name (`/name`, `/delivery/url`), else `body`.
 */
export function parseJsonBody(bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0) return {};
  const parsed = parseJsonText(bytes);
  if (!parsed.ok) {
    const field = parsed.pointer === undefined || parsed.pointer === '' ? 'body' : parsed.pointer;
    throw new GatewayError('CEG_MALFORMED_REQUEST', `the body is ${parsed.reason}`.slice(0, 400), { retriable: false, details: { field } });
  }
  if (typeof parsed.value !== 'object' || parsed.value === null) {
    throw new GatewayError('CEG_MALFORMED_REQUEST', 'the body is not a JSON object (or array)', { retriable: false, details: { field: 'body' } });
  }
  return parsed.value;
}

/**
 * Why the Content-Type cannot be honoured, else undefined: not one media type (a parameter given
 * twice, RFC 6838 §4.3; a list; malformed, RFC 9110 §8.3.1 — read by the envelope's one parser,
 * as the ingress and `datacontenttype` read it), or a `charset` other than UTF-8 (JSON text is
 * UTF-8: RFC 8259 §8.1; a quoted value counts unquoted, any case).
 */
function contentTypeProblem(req: Request): string | undefined {
  const ct = req.headers['content-type'];
  if (ct === undefined) return undefined;
  const read = readMediaType(ct);
  if (isMediaTypeFault(read)) return mediaTypeProblem(ct, 'Content-Type');
  const charset = read.params.charset?.toLowerCase();
  return charset === undefined || charset === 'utf-8' || charset === 'utf8' ? undefined : `charset "${charset.slice(0, 40)}" is not supported: JSON text is UTF-8 (RFC 8259 §8.1)`;
}

/** 415 CEG_UNSUPPORTED_MEDIA_TYPE naming the Content-Type (cut to 100 characters) and what is supported. */
function unsupportedContentType(req: Request, reason: string): GatewayError {
  return new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', reason, { retriable: false, details: { field: 'body', contentType: String(req.headers['content-type']).slice(0, 100), supported: ['charset=utf-8'] } });
}

/**
 * Whether the request carries a body at all: a `Content-Length` or a `Transfer-Encoding` (RFC 9112
 * §6.3). A request with neither (`curl -X POST` without `-d`) has none.
 */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
}

/**
 * Whether the request's Content-Type is one of `essences` (`application/json`…), whether or not a
 * body came. With a body it is express's `req.is()` (a Content-Type that is not one media type then
 * reaches {@link jsonBody}, which names the fault); without one `req.is()` answers null, so a POST
 * with `Content-Type: application/json` and no body was refused `415` "send … as application/json"
 * naming `application/json` as what came: there the header is read by the envelope's media-type
 * parser, and {@link jsonBody} reads the empty body as `{}`, so the route names what is missing.
 */
export function isContentType(req: Request, essences: readonly string[]): boolean {
  if (hasBody(req)) return essences.some((t) => req.is(t) === t);
  const ct = req.headers['content-type'];
  const mt = ct === undefined ? undefined : parseMediaType(ct);
  return mt !== undefined && essences.includes(mt.essence);
}

/**
 * body-parser's `type` matched by the envelope's media-type parser when it is a list of exact
 * essences (`application/json`): the same text is then the same type here as at the ingress
 * (body-parser's parser refuses `application/json;;charset=utf-8`, RFC 9110 §8.3.1 allows it).
 * A wildcard or a function is passed on as it is.
 */
function byOneParser(type: JsonBodyOptions['type']): JsonBodyOptions['type'] {
  if (typeof type === 'function') return type;
  const essences = (typeof type === 'string' ? [type] : type).map((t) => t.toLowerCase());
  if (essences.some((t) => t.includes('*') || !t.includes('/'))) return type;
  return (req: IncomingMessage): boolean => {
    const ct = req.headers['content-type'];
    const mt = ct === undefined ? undefined : parseMediaType(ct);
    return mt !== undefined && essences.includes(mt.essence);
  };
}

/**
 * A middleware reading a JSON body of the types `opts.type` into `req.body` with
 * {@link parseJsonBody}; a request of another type passes with `req.body` untouched (undefined);
 * one of these types without a body (no Content-Length, no Transfer-Encoding) reads as an empty
 * body (`{}`, {@link isEmptyBody}) when `opts.type` is exact essences or a test.
 * Errors (to `next`): those of {@link parseJsonBody}; CEG_UNSUPPORTED_MEDIA_TYPE (415, naming
 * `contentType` and `supported`) for a charset other than UTF-8 or a Content-Type that is not
 * one media type (a parameter twice, a list, malformed); body-parser's as GatewayErrors
 * naming the `body` (`asGatewayError`): 413 CEG_PAYLOAD_TOO_LARGE with `maxBytes`, 415 for an
 * unknown content coding, 400 CEG_MALFORMED_REQUEST for broken gzip or a body cut short.
 */
export function jsonBody(opts: JsonBodyOptions): RequestHandler {
  const matches = byOneParser(opts.type);
  const raw = express.raw({ limit: opts.limit, type: matches, inflate: true });
  return (req: Request, res: Response, next: NextFunction): void => {
    // Not one media type (a parameter twice, a list, malformed): 415 before the body is read, as
    // the ingress refuses it — body-parser's own parser would otherwise pick a type its way.
    const ct = req.headers['content-type'];
    const fault = ct === undefined ? undefined : readMediaType(ct);
    if (ct !== undefined && fault !== undefined && isMediaTypeFault(fault)) {
      next(unsupportedContentType(req, mediaTypeProblem(ct, 'Content-Type') ?? 'Content-Type is not one media type'));
      return;
    }
    // No body at all (no Content-Length, no Transfer-Encoding), of a type read here: the empty
    // body it is, as `Content-Length: 0` reads (body-parser passes such a request over unread).
    if (!hasBody(req) && typeof matches === 'function' && matches(req)) {
      res.locals[EMPTY_BODY] = true;
      req.body = {};
      next();
      return;
    }
    raw(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) {
        // body-parser's (a body over the bound, broken gzip, a body cut short): 4xx naming the body.
        next(asGatewayError(err, req.originalUrl, 'body'));
        return;
      }
      const bytes: unknown = req.body;
      if (!Buffer.isBuffer(bytes)) {
        next();
        return;
      }
      const problem = contentTypeProblem(req);
      if (problem !== undefined) {
        req.body = undefined;
        next(unsupportedContentType(req, problem));
        return;
      }
      // Read as {} (the routes then name what is missing); a route where "no body" cannot mean
      // "nothing" (a PATCH) asks with isEmptyBody().
      if (bytes.byteLength === 0) res.locals[EMPTY_BODY] = true;
      try {
        req.body = parseJsonBody(bytes);
      } catch (e) {
        next(e);
        return;
      }
      next();
    });
  };
}
