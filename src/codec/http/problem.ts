/**
 * GatewayError → RFC 9457 problem details, the body of every HTTP error answer.
 * Spec: RFC 9457 §3.1 (type, title, status, detail, instance) and §3.2 (extension members:
 * `code`, `violations`).
 */
import type { GatewayError } from '../../core/errors.js';
import type { Violation } from '../../envelope/index.js';
import { MAX_LISTED_VIOLATIONS } from '../data/index.js';

/** Media type of problem details (RFC 9457 §3). */
export const problemContentType = 'application/problem+json';

/** Prefix of the `type` URI; the rest is the error code, documented in docs/errors.md. */
export const problemTypePrefix = 'urn:ce-gateway:error:';

/** An RFC 9457 problem object with ce-gateway's extension members. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  /** HTTP status code. */
  readonly status: number;
  readonly detail: string;
  /** Stable error code (CEG_*). */
  readonly code: string;
  readonly retriable: boolean;
  /** Every violation, each naming an attribute or a field (JSON pointer), with `index` in a batch. */
  readonly violations?: readonly Violation[];
  /** How many violations were found, present only when more than `violations` lists (at most MAX_LISTED_VIOLATIONS = 100). */
  readonly violationCount?: number;
  readonly instance?: string;
}

interface Row {
  readonly status: number;
  readonly title: string;
}

// Built once. Unknown codes: 503 when retriable, else 500. A 503 row is the code's answer when
// retriable; raised not retriable it is a 500 (problemStatus).
const byCode: ReadonlyMap<string, Row> = new Map<string, Row>([
  ['CEG_INVALID_ATTRIBUTE', { status: 400, title: 'Invalid CloudEvent attribute' }],
  ['CEG_MISSING_ATTRIBUTE', { status: 400, title: 'Missing CloudEvent attribute' }],
  ['CEG_INVALID_EVENT', { status: 400, title: 'Invalid CloudEvent' }],
  ['CEG_INVALID_DATA', { status: 400, title: 'Invalid event data' }],
  ['CEG_UNKNOWN_TYPE', { status: 400, title: 'Unknown event type' }],
  ['CEG_PARTITION_KEY_MISMATCH', { status: 400, title: 'Partition key does not match the event' }],
  ['CEG_INVALID_NAME', { status: 400, title: 'Invalid name' }],
  ['CEG_SCHEMA_NOT_FOUND', { status: 400, title: 'Schema not found' }],
  ['CEG_SCHEMA_INVALID', { status: 400, title: 'Invalid schema' }],
  ['CEG_SCHEMA_INCOMPATIBLE', { status: 409, title: 'Incompatible schema' }],
  ['CEG_NOT_REGISTRY_FRAMED', { status: 400, title: 'Data is not registry-framed' }],
  ['CEG_DECODE_FAILED', { status: 400, title: 'Data could not be decoded' }],
  ['CEG_PAYLOAD_TOO_LARGE', { status: 413, title: 'Payload too large' }],
  ['CEG_TOO_MANY_ATTRIBUTES', { status: 400, title: 'Too many CloudEvent attributes' }],
  ['CEG_ATTRIBUTES_TOO_LARGE', { status: 413, title: 'CloudEvent attributes too large' }],
  ['CEG_UNSUPPORTED_MEDIA_TYPE', { status: 415, title: 'Unsupported media type' }],
  ['CEG_REGISTRY_UNAVAILABLE', { status: 503, title: 'Schema registry unavailable' }],
  ['CEG_BROKER_UNAVAILABLE', { status: 503, title: 'Event broker unavailable' }],
  ['CEG_DELIVERY_TIMEOUT', { status: 503, title: 'Event not confirmed in time' }],
  ['CEG_QUEUE_FULL', { status: 503, title: 'Gateway busy' }],
  ['CEG_CLOSED', { status: 503, title: 'Gateway shutting down' }],
  ['CEG_NOT_FOUND', { status: 404, title: 'Not found' }],
  ['CEG_INVALID_SUBSCRIPTION', { status: 400, title: 'Invalid subscription' }],
  ['CEG_CONFLICT', { status: 409, title: 'Conflict' }],
  ['CEG_WEBHOOK_TARGET_REFUSED', { status: 400, title: 'Webhook target refused' }],
  ['CEG_SECRETS_KEY_MISSING', { status: 500, title: 'Subscription secrets key missing' }],
  ['CEG_INVALID_REPLAY', { status: 400, title: 'Invalid replay' }],
  ['CEG_REPLAY_FAILED', { status: 503, title: 'Replay failed' }],
  ['CEG_INVALID_CURSOR', { status: 400, title: 'Invalid cursor' }],
  ['CEG_INVALID_PARAMETER', { status: 400, title: 'Invalid parameter' }],
  ['CEG_MALFORMED_REQUEST', { status: 400, title: 'Bad request' }],
  ['CEG_METHOD_NOT_ALLOWED', { status: 405, title: 'Method not allowed' }],
  ['CEG_REQUEST_TIMEOUT', { status: 408, title: 'Request timeout' }],
  ['CEG_HEADERS_TOO_LARGE', { status: 431, title: 'Request header fields too large' }],
  ['CEG_URI_TOO_LONG', { status: 414, title: 'URI too long' }],
  ['CEG_EXPECTATION_FAILED', { status: 417, title: 'Expectation failed' }],
  ['CEG_NOT_IMPLEMENTED', { status: 501, title: 'Not implemented' }],
  ['CEG_STORE_UNAVAILABLE', { status: 503, title: 'Store unavailable' }],
  ['CEG_UNAUTHENTICATED', { status: 401, title: 'Unauthorized' }],
  ['CEG_AUTH_UNAVAILABLE', { status: 503, title: 'Authentication unavailable' }],
  ['CEG_FORBIDDEN', { status: 403, title: 'Forbidden' }],
  ['CEG_QUOTA_EXCEEDED', { status: 403, title: 'Quota exceeded' }],
  ['CEG_RATE_LIMITED', { status: 429, title: 'Too many requests' }],
  ['CEG_INVALID_OPTIONS', { status: 500, title: 'Server misconfigured' }],
  ['CEG_CATALOG_INVALID', { status: 500, title: 'Server misconfigured' }],
]);

/**
 * HTTP status for an error: 400 validation, 413 too large, 415 media type, 429 rate limited, 503
 * other retriable, else the code's status (500 when it has none). A 503 always says retriable and
 * a non-retriable error is never a 503: RFC 9110 §15.6.4 makes 503 "try again later" (the gateway
 * adds `Retry-After`), so a code whose usual answer is 503 (CEG_BROKER_UNAVAILABLE, …) raised not
 * retriable — a broker refusing the gateway's credentials, a registry's unexpected answer, a
 * client error the transport could not place — is a 500: waiting does not mend it.
 */
export function problemStatus(err: GatewayError): number {
  const row = byCode.get(err.code);
  // A rate limit is retriable (later) but the fault is the client's pace, not the gateway's state.
  if (err.retriable) return row?.status === 429 ? 429 : 503;
  const status = row?.status ?? 500;
  return status === 503 ? 500 : status;
}

/** Details copied into a 4xx problem as extension members (RFC 9457 §3.2): none holds a secret. */
const NAMED_DETAILS = ['limit', 'max', 'actual', 'maxBytes', 'maxBatchEvents', 'maxMessageBytes', 'topic', 'contentType', 'contentEncoding', 'transferEncoding', 'supported', 'allow', 'permission', 'maxSubscriptions', 'setting'] as const;

/**
 * Server errors whose message is told like a refusal's: they are not an unexpected failure whose
 * internals must stay inside, but a state of this gateway the caller (or its operator) acts on.
 * 501: what the request asked for is not implemented. CEG_SECRETS_KEY_MISSING (500, not
 * retriable: waiting does not give the gateway a key): the deployment lacks
 * SUBSCRIPTION_SECRETS_KEY; the message names the setting (nothing secret).
 */
const TOLD_SERVER_ERRORS: ReadonlySet<string> = new Set(['CEG_NOT_IMPLEMENTED', 'CEG_SECRETS_KEY_MISSING']);

function isViolationList(v: unknown): v is readonly Violation[] {
  return Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null && typeof (x as { reason?: unknown }).reason === 'string');
}

/**
 * The problem object for `err`; `instance` (e.g. the request path or a request id) is copied
 * when given. Client errors (4xx) carry the error message as `detail` and the violations;
 * server errors (5xx) carry the error message only when retriable (it says what to retry),
 * never internals of an unexpected failure; 501 (what the request asked for is not implemented)
 * is told like a client error.
 * Shape: { type: `urn:ce-gateway:error:<CODE>`, title, status, detail, code, retriable,
 * violations? (at most MAX_LISTED_VIOLATIONS, the first found), violationCount? (the total, only
 * when more were found than listed), instance? }.
 */
export function toProblem(err: GatewayError, instance?: string): Problem {
  const status = problemStatus(err);
  const row = byCode.get(err.code);
  const title = row?.title ?? (status === 503 ? 'Service unavailable' : 'Internal error');
  // 501 answers what the request asked for (a transfer coding it chose), not a failure of ours,
  // and a missing secrets key is the deployment's state: told like a refusal (message, violations, named details).
  const refusal = status < 500 || TOLD_SERVER_ERRORS.has(err.code);
  const detail = refusal || err.retriable ? err.message : 'the gateway failed to process the request';
  const violations = err.details.violations;
  const problem: {
    type: string;
    title: string;
    status: number;
    detail: string;
    code: string;
    retriable: boolean;
    violations?: readonly Violation[];
    violationCount?: number;
    instance?: string;
  } = { type: problemTypePrefix + err.code, title, status, detail, code: err.code, retriable: err.retriable };
  if (refusal && isViolationList(violations)) {
    // Every answer lists at most MAX_LISTED_VIOLATIONS; `violationCount` has the total when more were found.
    problem.violations = violations.length > MAX_LISTED_VIOLATIONS ? violations.slice(0, MAX_LISTED_VIOLATIONS) : violations;
    const counted = Math.max(typeof err.details.violationCount === 'number' ? err.details.violationCount : 0, violations.length);
    if (counted > problem.violations.length) problem.violationCount = counted;
  }
  else if (refusal && (typeof err.details.attribute === 'string' || typeof err.details.field === 'string')) {
    const v: { attribute?: string; field?: string; reason: string } = { reason: err.message };
    if (typeof err.details.attribute === 'string') v.attribute = err.details.attribute;
    if (typeof err.details.field === 'string') v.field = err.details.field;
    problem.violations = [v];
  }
  if (refusal) {
    // The figures that name the cause of a refusal (the limit broken, the media type received).
    for (const key of NAMED_DETAILS) {
      const v = err.details[key];
      if (v !== undefined) (problem as Record<string, unknown>)[key] = v;
    }
  }
  if (instance !== undefined) problem.instance = instance;
  return problem;
}
