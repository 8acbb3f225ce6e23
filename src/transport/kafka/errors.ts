import { errorTree } from '../../core/error-tree.js';
import { GatewayError } from '../../core/errors.js';
import { kafkaAccessFailure } from '../access-failure.js';

/** What a kafkajs error looks like from outside (kafkajs's classes are not exported as types). */
interface KafkaJsLike {
  readonly name?: unknown;
  readonly type?: unknown;
  readonly retriable?: unknown;
  readonly cause?: unknown;
  readonly code?: unknown;
  readonly message?: unknown;
}

const CONNECTION_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaJSLockTimeout',
  // kafkajs gives up finding a group's coordinator (a broker that did not answer, or the offsets
  // topic's leader moving) with a "non-retriable" error: for us it is the broker being away.
  'KafkaJSGroupCoordinatorNotFound',
]);
/** kafkajs's names of the coordinator answers (kafkajs 2.2 protocol/error.js: not Kafka's current ones). */
const COORDINATOR_TYPES = new Set(['GROUP_COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR_FOR_GROUP', 'GROUP_LOAD_IN_PROGRESS']);
const CONNECTION_TYPES = new Set([
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_FOR_PARTITION',
  'NOT_ENOUGH_REPLICAS',
  'BROKER_NOT_AVAILABLE',
  'COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  ...COORDINATOR_TYPES,
  'NETWORK_EXCEPTION',
]);
const TIMEOUT_NAMES = new Set(['KafkaJSRequestTimeoutError', 'KafkaJSTimeout']);
const TIMEOUT_TYPES = new Set(['REQUEST_TIMED_OUT', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND']);
const TOO_LARGE_TYPES = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE']);

/**
 * kafkajs's admin (listTopics, fetchTopicMetadata, describeCluster) reads `topicMetadata` or
 * `brokers` off the answer of `cluster.metadata()`, which is `null` when every broker failed the
 * metadata request (kafkajs 2.2 `BrokerPool.withBroker` swallows each broker's error). What
 * reaches us is then a bare TypeError thrown from kafkajs's admin, which means "no broker
 * answered": an outage, not a bug of ours (seen in CI with the broker paused by SIGSTOP).
 */
function isNoBrokerAnsweredMetadata(err: unknown): boolean {
  if (!(err instanceof TypeError)) return false;
  const stack = typeof err.stack === 'string' ? err.stack : '';
  return /\bnull\b/.test(err.message) && /[\\/]kafkajs[\\/]src[\\/]admin[\\/]/.test(stack);
}

/**
 * True when the error (anywhere in it, a GatewayError's cause too) says the group's coordinator is
 * not available, is loading or is another broker (transport/coordinator-wait.ts): kafkajs's
 * coordinator answers, or its KafkaJSGroupCoordinatorNotFound — which is all kafkajs says when
 * FindCoordinator keeps answering COORDINATOR_NOT_AVAILABLE (a broker just started) and also when
 * no broker answers it (a stalled broker: the wait is bounded). Never for settings the broker
 * refuses (a login, an ACL).
 */
export function coordinatorUnavailable(err: unknown): boolean {
  if (kafkaAccessFailure(err) !== undefined) return false;
  return errorTree<KafkaJsLike>(err).some((l) => l.name === 'KafkaJSGroupCoordinatorNotFound' || (typeof l.type === 'string' && COORDINATOR_TYPES.has(l.type)));
}

/** Kafka protocol error names (kafkajs `type`, e.g. `GROUP_ID_NOT_FOUND`) anywhere in the error (its `cause` chain and aggregate members). */
export function kafkaErrorTypes(err: unknown): Set<string> {
  return new Set(errorTree<KafkaJsLike>(err).map((l) => l.type).filter((t): t is string => typeof t === 'string'));
}

/**
 * Maps a kafkajs failure to a GatewayError, looking through its `cause` chain (kafkajs wraps the
 * real failure in KafkaJSNumberOfRetriesExceeded / KafkaJSNonRetriableError):
 * - unknown topic → `CEG_INVALID_NAME` (retriable: false; topics are never auto-created), `details.topicMissing: true`;
 * - record too large → `CEG_PAYLOAD_TOO_LARGE` (retriable: false);
 * - settings the broker refuses (transport/access-failure: SASL login or mechanism, an ACL, a
 *   broker certificate the client does not trust) → `CEG_BROKER_UNAVAILABLE` (retriable: false,
 *   `details.reason`: they do not get better by waiting; issue 11);
 * - request timeout → `CEG_DELIVERY_TIMEOUT` (retriable: true; the write is indeterminate);
 * - connection, leader or coordinator unavailable → `CEG_BROKER_UNAVAILABLE` (retriable: true);
 * - a TypeError thrown from kafkajs's admin on a `null` metadata answer (no broker answered the
 *   metadata request; see `isNoBrokerAnsweredMetadata`) → `CEG_BROKER_UNAVAILABLE` (retriable: true);
 * - anything else → `CEG_BROKER_UNAVAILABLE` with kafkajs's own `retriable` flag of the root cause
 *   (false when kafkajs does not say true: unknown errors are not retried by default).
 * `context` (topic, group, operation) lands in `details`.
 * Spec: DESIGN "Known traps" (timeouts are indeterminate); STYLE D3 (retriable decided at the throw site).
 */
export function fromKafkaError(err: unknown, context: Readonly<Record<string, unknown>>): GatewayError {
  if (err instanceof GatewayError) return err;
  const links = errorTree<KafkaJsLike>(err);
  const names = links.map((l) => String(l.name));
  const types = links.map((l) => String(l.type));
  const root = links[links.length - 1];
  const message = typeof (err as KafkaJsLike | null)?.message === 'string' ? String((err as KafkaJsLike).message) : String(err);
  const details = { ...context, kafkaError: names[0], kafkaType: types.find((t) => t !== 'undefined') };
  const make = (code: 'CEG_INVALID_NAME' | 'CEG_PAYLOAD_TOO_LARGE' | 'CEG_DELIVERY_TIMEOUT' | 'CEG_BROKER_UNAVAILABLE', retriable: boolean): GatewayError =>
    new GatewayError(code, `${typeof context.operation === 'string' ? context.operation : 'kafka'}: ${message}`, { retriable, cause: err, details });

  if (types.includes('UNKNOWN_TOPIC_OR_PARTITION')) return new GatewayError('CEG_INVALID_NAME', `${typeof context.operation === 'string' ? context.operation : 'kafka'}: ${message}`, { retriable: false, cause: err, details: { ...details, topicMissing: true } });
  if (types.some((t) => TOO_LARGE_TYPES.has(t))) return make('CEG_PAYLOAD_TOO_LARGE', false);
  // Settings the broker refuses (SASL login or mechanism, ACLs, an untrusted certificate): a
  // configuration problem, not an outage; looked at before the connection checks below.
  const access = kafkaAccessFailure(err);
  if (access !== undefined) return new GatewayError('CEG_BROKER_UNAVAILABLE', `${typeof context.operation === 'string' ? context.operation : 'kafka'}: ${access.text}`, { retriable: false, cause: err, details: { ...details, reason: access.reason } });
  if (names.some((n) => TIMEOUT_NAMES.has(n)) || types.some((t) => TIMEOUT_TYPES.has(t))) return make('CEG_DELIVERY_TIMEOUT', true);
  if (names.some((n) => CONNECTION_NAMES.has(n)) || types.some((t) => CONNECTION_TYPES.has(t)) || links.some((l) => SOCKET_CODES.has(String(l.code)))) {
    return make('CEG_BROKER_UNAVAILABLE', true);
  }
  if (isNoBrokerAnsweredMetadata(err)) return make('CEG_BROKER_UNAVAILABLE', true);
  return make('CEG_BROKER_UNAVAILABLE', root?.retriable === true);
}
