/**
 * Typed errors of ce-gateway. Every throw site states whether the failure is retriable, so nothing
 * is retried by accident and nothing transient is dead-lettered (bus spec S5; DESIGN "Delivery").
 */

/** Stable error codes; each one is documented in docs/errors.md (a test checks it). */
export const errorCodes = [
  'CEG_INVALID_OPTIONS',
  'CEG_INVALID_ATTRIBUTE',
  'CEG_MISSING_ATTRIBUTE',
  'CEG_INVALID_EVENT',
  'CEG_UNSUPPORTED_MEDIA_TYPE',
  'CEG_UNKNOWN_TYPE',
  'CEG_INVALID_DATA',
  'CEG_PAYLOAD_TOO_LARGE',
  'CEG_TOO_MANY_ATTRIBUTES',
  'CEG_ATTRIBUTES_TOO_LARGE',
  'CEG_PARTITION_KEY_MISMATCH',
  'CEG_INVALID_NAME',
  'CEG_UNKNOWN_TOPIC',
  'CEG_SCHEMA_NOT_FOUND',
  'CEG_SCHEMA_INVALID',
  'CEG_SCHEMA_INCOMPATIBLE',
  'CEG_REGISTRY_UNAVAILABLE',
  'CEG_BROKER_UNAVAILABLE',
  'CEG_DELIVERY_TIMEOUT',
  'CEG_QUEUE_FULL',
  'CEG_NOT_REGISTRY_FRAMED',
  'CEG_DECODE_FAILED',
  'CEG_CATALOG_INVALID',
  'CEG_CLOSED',
  'CEG_INTERNAL',
  'CEG_NOT_FOUND',
  'CEG_SINK_FAILED',
  'CEG_STORE_UNAVAILABLE',
  'CEG_MALFORMED_REQUEST',
  'CEG_METHOD_NOT_ALLOWED',
  'CEG_REQUEST_TIMEOUT',
  'CEG_HEADERS_TOO_LARGE',
  'CEG_URI_TOO_LONG',
  'CEG_EXPECTATION_FAILED',
  'CEG_NOT_IMPLEMENTED',
  'CEG_INVALID_SUBSCRIPTION',
  'CEG_CONFLICT',
  'CEG_WEBHOOK_TARGET_REFUSED',
  'CEG_SECRETS_KEY_MISSING',
  'CEG_INVALID_REPLAY',
  'CEG_REPLAY_FAILED',
  'CEG_UNAUTHENTICATED',
  'CEG_AUTH_UNAVAILABLE',
  'CEG_FORBIDDEN',
  'CEG_RATE_LIMITED',
  'CEG_QUOTA_EXCEEDED',
  'CEG_INVALID_CURSOR',
  'CEG_INVALID_PARAMETER',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/** Options every {@link GatewayError} needs; `retriable` has no default on purpose. */
export interface GatewayErrorOptions {
  /** true: the same operation may succeed later (broker or registry unreachable); false: it never will. */
  readonly retriable: boolean;
  readonly cause?: unknown;
  /** Structured context for logs and problem+json (attribute, field, topic, partition…). No secrets. */
  readonly details?: Readonly<Record<string, unknown>>;
}

/**
 * The one error class of the project.
 * Shape: `code` (stable, see {@link errorCodes}), `message`, `retriable`, frozen `details`.
 */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message: string, opts: GatewayErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.code = code;
    this.retriable = opts.retriable;
    this.details = Object.freeze({ ...opts.details });
  }
}

/** True when `err` is a {@link GatewayError}, optionally with the given code. */
export function isGatewayError(err: unknown, code?: ErrorCode): err is GatewayError {
  return err instanceof GatewayError && (code === undefined || err.code === code);
}

/**
 * Message of any thrown value, for logs and failure reasons: always a string. An Error's
 * `message` is used when it is one; an Error whose `message` was replaced by something else (an
 * object, a number) is described through String(), and a handler that threw one stopped its
 * subscription (`reason.slice` of a non-string).
 */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const message: unknown = err.message;
    if (typeof message === 'string') return message;
    const name: unknown = err.name;
    return `${typeof name === 'string' ? name : 'Error'}: ${errorMessage(message)}`;
  }
  try {
    return String(err);
  } catch {
    // A thrown object without toString (Object.create(null)) or whose toString throws: String()
    // itself threw, and a subscription stopped on it.
    return `a thrown ${err === null ? 'null' : typeof err} that cannot be turned into text`;
  }
}

/**
 * Why a file could not be read, for a start-up message: the errno code (`ENOENT`, `EACCES`,
 * `EISDIR`, …), or `error` when the failure carries none. The cause alone is not printed by
 * `serve`, and "cannot read" without it leaves a wrong path and a wrong mode looking alike.
 */
export function readErrorCode(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' && code !== '' ? code : 'error';
}
