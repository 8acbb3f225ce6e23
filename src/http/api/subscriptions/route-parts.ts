/**
 * What every `/subscriptions/{name}/…` router needs the same way: the API once loaded (503 while
 * the gateway starts), the `{name}` path parameter checked (404, never an echo of a bad name in
 * full), and 405 with `Allow` for other methods.
 * Spec: RFC 9110 §15.5.6 (405 and `Allow`); RFC 9457 (problem answers, via the app's handler).
 */
import type { NextFunction, Request, Response } from 'express';
import { GatewayError } from '../../../core/errors.js';
import { NAME_PATTERN } from '../../../bus/subscriptions/index.js';

/** `api()` when it is there. Errors: CEG_BROKER_UNAVAILABLE (retriable, 503) while the subscriptions load. */
export function loadedApi<T>(api: () => T | undefined): () => T {
  return () => {
    const a = api();
    if (a === undefined) throw new GatewayError('CEG_BROKER_UNAVAILABLE', 'the gateway is starting: subscriptions are not loaded yet', { retriable: true });
    return a;
  };
}

/** A name as routes take it: HTTP resources' names, and library/connector subscription names (consumer groups, dots allowed). */
export const ROUTE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * The `{name}` path parameter, checked against `pattern` (HTTP resources' names by default).
 * Errors: CEG_NOT_FOUND naming `name` (a name that cannot exist is simply not there).
 */
export function subscriptionName(req: Request, pattern: RegExp = NAME_PATTERN): string {
  const n = String(req.params.name);
  if (!pattern.test(n)) throw new GatewayError('CEG_NOT_FOUND', `no subscription named ${n.slice(0, 100)}`, { retriable: false, details: { field: 'name' } });
  return n;
}

/**
 * A handler answering 405 with `Allow: <allow>` (e.g. `GET, DELETE`). express answers HEAD
 * wherever it answers GET, so `HEAD` is listed after `GET` (RFC 9110 §10.2.1: Allow lists what the
 * resource supports) unless `head` is false — a route that refuses HEAD on purpose.
 */
export function notAllowed(methods: string, head = true): (req: Request, res: Response, next: NextFunction) => void {
  const allow = head ? methods.replace(/\bGET\b/, 'GET, HEAD') : methods;
  return (req, res, next) => {
    res.set('allow', allow);
    next(new GatewayError('CEG_METHOD_NOT_ALLOWED', `${req.method} is not allowed here; allowed: ${allow}`, { retriable: false, details: { allow: allow.split(', ') } }));
  };
}

/**
 * The `owner` query parameter of a subscription route (an admin's way to address another owner's
 * subscription), with the query checked: any other parameter than `owner` and `also`, or one
 * given twice, is refused, as the pull routes do (an `owner[]=` was silently ignored before).
 * Errors: CEG_INVALID_PARAMETER naming the parameter.
 */
export function ownerParam(req: Request, also: readonly string[] = []): string | undefined {
  return queryParams(req, ['owner', ...also]).get('owner');
}

/**
 * The query as single strings; a parameter not in `allowed`, or one given twice (express 5's
 * simple parser makes repeated names arrays), is refused.
 * Errors: CEG_INVALID_PARAMETER naming the parameter (cut to 50 characters).
 */
export function queryParams(req: Request, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(req.query as Record<string, unknown>)) {
    const field = k.slice(0, 50);
    if (!allowed.includes(k)) throw new GatewayError('CEG_INVALID_PARAMETER', `${field}: unknown query parameter (known: ${allowed.join(', ')})`, { retriable: false, details: { field } });
    if (typeof v !== 'string') throw new GatewayError('CEG_INVALID_PARAMETER', `${field}: give it once, as a single value`, { retriable: false, details: { field } });
    out.set(k, v);
  }
  return out;
}
