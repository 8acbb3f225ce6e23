import { errorTree } from '../../core/error-tree.js';
import { GatewayError } from '../../core/errors.js';
import { kafkaAccessFailure } from '../access-failure.js';

/** What a @platformatic/kafka error looks like from outside (GenericError / MultipleErrors / ProtocolError). */
interface PlatformaticLike {
  readonly name?: unknown;
  readonly code?: unknown;
  readonly apiId?: unknown;
  readonly canRetry?: unknown;
  readonly message?: unknown;
  readonly cause?: unknown;
  readonly errors?: unknown;
  /** A ProtocolError's detailed message from the broker (null when it sent none). */
  readonly serverErrorMessage?: unknown;
}

const CONNECTION_IDS = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_OR_FOLLOWER',
  'NOT_ENOUGH_REPLICAS',
  'BROKER_NOT_AVAILABLE',
  'COORDINATOR_NOT_AVAILABLE',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'NOT_COORDINATOR',
  'NETWORK_EXCEPTION',
]);
const TIMEOUT_IDS = new Set(['REQUEST_TIMED_OUT', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND']);
const TOO_LARGE_IDS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
const UNKNOWN_TOPIC_IDS = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'UNKNOWN_TOPIC_ID']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE']);
/** Answers after which the idempotent producer's sequence state no longer matches the broker's. */
const PRODUCER_STATE_IDS = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'INVALID_PRODUCER_ID_MAPPING', 'DUPLICATE_SEQUENCE_NUMBER']);

/** A group's coordinator not there yet (a broker starting, the offsets topic being created or loaded) or moved. */
const COORDINATOR_IDS = new Set(['NOT_COORDINATOR', 'COORDINATOR_LOAD_IN_PROGRESS', 'COORDINATOR_NOT_AVAILABLE']);

/**
 * True when the error (anywhere in it, a GatewayError's cause too) is the broker saying the
 * group's coordinator is not available, is loading or is another broker (transport/coordinator-wait.ts);
 * never for settings the broker refuses (a login, an ACL).
 */
export function coordinatorUnavailable(err: unknown): boolean {
  if (kafkaAccessFailure(err) !== undefined) return false;
  for (const id of protocolIds(err)) if (COORDINATOR_IDS.has(id)) return true;
  return false;
}

/** Kafka protocol error names (e.g. `UNKNOWN_TOPIC_OR_PARTITION`) anywhere in the error. */
export function protocolIds(err: unknown): Set<string> {
  return new Set(errorTree<PlatformaticLike>(err).map((l) => l.apiId).filter((id): id is string => typeof id === 'string'));
}

/**
 * What the broker said with the protocol error `id` anywhere in the error: its detailed message
 * when it sent one, else the protocol error's own text; undefined when `id` is not in it.
 */
export function brokerMessageOf(err: unknown, id: string): string | undefined {
  const hit = errorTree<PlatformaticLike>(err).find((l) => l.apiId === id);
  if (hit === undefined) return undefined;
  if (typeof hit.serverErrorMessage === 'string' && hit.serverErrorMessage !== '') return hit.serverErrorMessage;
  return typeof hit.message === 'string' ? hit.message : undefined;
}

/**
 * True when a @platformatic/kafka error says its metadata was stale (the broker answered
 * UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER and the like: `hasStaleMetadata` anywhere in it).
 */
export function staleMetadata(err: unknown): boolean {
  return errorTree<PlatformaticLike & { readonly hasStaleMetadata?: unknown }>(err).some((l) => l.hasStaleMetadata === true);
}

/** True when the error says the idempotent producer's state is gone (a new producer id is needed). */
export function producerStateLost(err: unknown): boolean {
  for (const id of protocolIds(err)) if (PRODUCER_STATE_IDS.has(id)) return true;
  return false;
}

/**
 * Maps a @platformatic/kafka failure to a GatewayError, looking through its `cause` chain and the
 * members of its aggregate errors (the library wraps every retried attempt in `MultipleErrors`
 * and a broker's per-partition answers in `ResponseError`):
 * - unknown topic (the broker's code, or the library's "Unknown topic" UserError) → `CEG_INVALID_NAME`
 *   (retriable: false; topics are never auto-created), `details.topicMissing: true`;
 * - record too large → `CEG_PAYLOAD_TOO_LARGE` (retriable: false);
 * - settings the broker refuses (transport/access-failure: SASL login or mechanism, an ACL, a
 *   broker certificate the client does not trust; the library wraps a refused login in a
 *   NetworkError) → `CEG_BROKER_UNAVAILABLE` (retriable: false, `details.reason`; issue 11);
 * - request timeout (the library's `TimeoutError`, or the broker's REQUEST_TIMED_OUT) →
 *   `CEG_DELIVERY_TIMEOUT` (retriable: true; the write is indeterminate);
 * - network errors (`PLT_KFK_NETWORK`, socket codes), leader or coordinator unavailable →
 *   `CEG_BROKER_UNAVAILABLE` (retriable: true);
 * - anything else → `CEG_BROKER_UNAVAILABLE`, retriable only when every error in it says
 *   `canRetry: true` (unknown errors are not retried by default).
 * `context` (topic, group, operation) lands in `details`.
 * Spec: DESIGN "Known traps" (timeouts are indeterminate); STYLE D3 (retriable decided at the throw site).
 */
export function fromPlatformaticError(err: unknown, context: Readonly<Record<string, unknown>>): GatewayError {
  if (err instanceof GatewayError) return err;
  const links = errorTree<PlatformaticLike>(err);
  const ids = links.map((l) => l.apiId).filter((id): id is string => typeof id === 'string');
  const message = typeof (err as PlatformaticLike | null)?.message === 'string' ? String((err as PlatformaticLike).message) : String(err);
  // The root causes first (errors wrapping nothing: "connect ECONNREFUSED 127.0.0.1:9092"), then
  // the wrappers' own words; each text once (a retried call repeats "Cannot connect to any broker.").
  const leaves = links.filter((l) => l.cause === undefined && !Array.isArray(l.errors));
  const texts = [...leaves, ...links.filter((l) => !leaves.includes(l))].map((l) => l.message).filter((m): m is string => typeof m === 'string' && m !== '' && m !== message);
  const inner = [...new Set(texts)].slice(0, 3);
  const details = { ...context, kafkaError: (err as PlatformaticLike | null)?.code, kafkaType: ids[0] };
  const text = `${typeof context.operation === 'string' ? context.operation : 'kafka'}: ${message}${inner.length > 0 ? ` (${inner.join('; ')})` : ''}`;
  const make = (code: 'CEG_INVALID_NAME' | 'CEG_PAYLOAD_TOO_LARGE' | 'CEG_DELIVERY_TIMEOUT' | 'CEG_BROKER_UNAVAILABLE', retriable: boolean): GatewayError =>
    new GatewayError(code, text, { retriable, cause: err, details });

  // The library's metadata look-up replaces the broker's UNKNOWN_TOPIC_OR_PARTITION by a UserError
  // "Unknown topic <name>." without a cause (base.js, 1.35): its text is all there is to go on.
  if (ids.some((id) => UNKNOWN_TOPIC_IDS.has(id)) || links.some((l) => l.code === 'PLT_KFK_USER' && typeof l.message === 'string' && l.message.startsWith('Unknown topic '))) {
    return new GatewayError('CEG_INVALID_NAME', text, { retriable: false, cause: err, details: { ...details, topicMissing: true } });
  }
  if (ids.some((id) => TOO_LARGE_IDS.has(id))) return make('CEG_PAYLOAD_TOO_LARGE', false);
  // Settings the broker refuses (SASL login or mechanism, ACLs, an untrusted certificate): a
  // configuration problem, not an outage; looked at before the connection checks below.
  const access = kafkaAccessFailure(err);
  if (access !== undefined) return new GatewayError('CEG_BROKER_UNAVAILABLE', `${typeof context.operation === 'string' ? context.operation : 'kafka'}: ${access.text}`, { retriable: false, cause: err, details: { ...details, reason: access.reason } });
  if (ids.some((id) => TIMEOUT_IDS.has(id)) || links.some((l) => l.name === 'TimeoutError' || l.message === 'Request timed out')) return make('CEG_DELIVERY_TIMEOUT', true);
  if (ids.some((id) => CONNECTION_IDS.has(id)) || links.some((l) => l.code === 'PLT_KFK_NETWORK' || SOCKET_CODES.has(String(l.code)))) {
    return make('CEG_BROKER_UNAVAILABLE', true);
  }
  const retriable = links.length > 0 && links.every((l) => l.canRetry === undefined || l.canRetry === true) && links.some((l) => l.canRetry === true);
  return make('CEG_BROKER_UNAVAILABLE', retriable);
}
