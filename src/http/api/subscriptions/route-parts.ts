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

/**
 * The `{name}` path parameter, checked against `pattern` (HTTP resources' names by default).
 * Errors: CEG_NOT_FOUND naming `name` (a name that cannot exist is simply not there).
 */
export function subscriptionName(req: Request, pattern: RegExp = NAME_PATTERN): string {
  const n = String(req.params.name);
  if (!pattern.test(n)) throw new GatewayError('CEG_NOT_FOUND', `no subscription named ${n.slice(0, 100)}`, { retriable: false, details: { field: 'name' } });
  return n;
}

/** A handler answering 405 with `Allow: <allow>` (e.g. `GET, DELETE`). */
export function notAllowed(allow: string): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    res.set('allow', allow);
    next(new GatewayError('CEG_METHOD_NOT_ALLOWED', `${req.method} is not allowed here; allowed: ${allow}`, { retriable: false, details: { allow: allow.split(', ') } }));
  };
}
