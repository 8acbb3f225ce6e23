/**
 * Recognises, for both Kafka adapters (kafkajs and @platformatic/kafka), the failures that no
 * amount of waiting mends because the client's own settings are wrong: the broker refused the
 * SASL credentials, does not offer the configured SASL mechanism, refused an operation for lack
 * of an ACL, presented a TLS certificate the client does not trust, or refuses a group member's
 * session timeout (outside its group.min/max.session.timeout.ms: KAFKA_SESSION_TIMEOUT_MS). The adapters turn them into
 * `CEG_BROKER_UNAVAILABLE` with `retriable: false` and `details.reason`, so start-up stops and
 * `createBus` / `serve` fail at once with the reason, as KafkaJS (`KafkaJSSASLAuthenticationError`,
 * non-retriable) and librdkafka (`_AUTHENTICATION`, `TOPIC_AUTHORIZATION_FAILED` fatal) users expect.
 *
 * Why one place: @platformatic/kafka reports a refused login as a `NetworkError` ("Connection to
 * … failed", code PLT_KFK_NETWORK) wrapping an `AuthenticationError`, so a network check that ran
 * first retried it for ever (break report: "SASL authentication failed" every 2–3 s); kafkajs's is
 * non-retriable only by the fallback. The adapters ask this before any reachability check.
 * Spec: Kafka protocol error codes (SASL_AUTHENTICATION_FAILED 58, UNSUPPORTED_SASL_MECHANISM 33,
 * ILLEGAL_SASL_STATE 34, *_AUTHORIZATION_FAILED 29/30/31/53/65, INVALID_SESSION_TIMEOUT 26); docs/errors.md CEG_BROKER_UNAVAILABLE.
 */
import { errorTree } from '../core/error-tree.js';
import type { ErrorLink } from '../core/error-tree.js';
import { tlsVerificationFailure } from '../core/tls-errors.js';

/** Why the broker cannot be used with these settings; `details.reason` of the GatewayError. */
export type AccessFailureReason = 'authentication' | 'sasl-mechanism' | 'authorization' | 'tls' | 'session-timeout';

/** A failure retrying cannot mend, and the text that says what to fix. */
export interface AccessFailure {
  readonly reason: AccessFailureReason;
  /** What went wrong and which settings to check; never a secret. */
  readonly text: string;
}

const AUTHENTICATION_IDS = new Set(['SASL_AUTHENTICATION_FAILED', 'ILLEGAL_SASL_STATE']);
const MECHANISM_IDS = new Set(['UNSUPPORTED_SASL_MECHANISM']);
/** A group join whose session timeout lies outside the broker's group.min/max.session.timeout.ms (code 26). */
const SESSION_TIMEOUT_IDS = new Set(['INVALID_SESSION_TIMEOUT']);
const AUTHORIZATION_IDS = new Set(['TOPIC_AUTHORIZATION_FAILED', 'GROUP_AUTHORIZATION_FAILED', 'CLUSTER_AUTHORIZATION_FAILED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', 'DELEGATION_TOKEN_AUTHORIZATION_FAILED']);
/** Error class names (kafkajs `name`) and codes (@platformatic/kafka `code`) of a refused SASL login. */
const AUTHENTICATION_NAMES = new Set(['KafkaJSSASLAuthenticationError']);
const AUTHENTICATION_CODES = new Set(['PLT_KFK_AUTHENTICATION']);

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE']);
/** kafkajs keeps only the text of what cut a SASL exchange short (no `cause`). */
const CUT_SHORT_TEXT = /Closed connection|Connection (?:closed|error)|timed out|ECONNRESET|EPIPE|ETIMEDOUT/i;

/**
 * True when a SASL error of the clients only says the exchange was cut short: the connection
 * dropped or a request timed out during the login (both clients wrap that in their SASL error
 * too). That is an outage, to be retried, not a refused login.
 */
function cutShort(link: ErrorLink): boolean {
  if (typeof link.message === 'string' && CUT_SHORT_TEXT.test(link.message)) return true;
  return errorTree(link.cause).some((l) => l.code === 'PLT_KFK_NETWORK' || l.name === 'TimeoutError' || SOCKET_CODES.has(String(l.code)));
}

/**
 * The access failure in a Kafka client's error (kafkajs or @platformatic/kafka, looked at through
 * its `cause` chain and aggregate members), or undefined when it is none (an outage, a timeout…).
 * Kafka protocol error names are read from kafkajs's `type` and @platformatic/kafka's `apiId`.
 */
export function kafkaAccessFailure(err: unknown): AccessFailure | undefined {
  const links = errorTree(err);
  const ids = new Set(links.flatMap((l) => [l.type, l.apiId]).filter((id): id is string => typeof id === 'string'));
  const has = (set: ReadonlySet<string>): string | undefined => [...ids].find((id) => set.has(id));
  // The mechanism is looked at before the login: @platformatic/kafka words a refused handshake
  // as an AuthenticationError ("Cannot find a suitable SASL mechanism") too.
  const mechanism = has(MECHANISM_IDS);
  if (mechanism !== undefined) {
    return { reason: 'sasl-mechanism', text: `the broker does not offer the configured SASL mechanism (${mechanism}): check KAFKA_SASL_MECHANISM against the listener's sasl.enabled.mechanisms; retrying cannot help` };
  }
  const refused = links.find((l) => (AUTHENTICATION_NAMES.has(String(l.name)) || AUTHENTICATION_CODES.has(String(l.code))) && !cutShort(l));
  const login = has(AUTHENTICATION_IDS) ?? (refused === undefined ? undefined : typeof refused.message === 'string' ? refused.message : 'SASL authentication failed');
  if (login !== undefined) {
    return { reason: 'authentication', text: `the broker refused the SASL login (${login}): check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD(_FILE) and KAFKA_SASL_MECHANISM; retrying cannot help` };
  }
  const denied = has(AUTHORIZATION_IDS);
  if (denied !== undefined) {
    return { reason: 'authorization', text: `the broker refused the operation: not authorized (${denied}): the Kafka user lacks an ACL for it; grant it, then retry` };
  }
  const session = has(SESSION_TIMEOUT_IDS);
  if (session !== undefined) {
    // Both clients say only that it is out of range: the text names the setting and the bounds.
    return { reason: 'session-timeout', text: `the broker refuses the consumer group session timeout (${session}): set KAFKA_SESSION_TIMEOUT_MS within the broker's group.min.session.timeout.ms and group.max.session.timeout.ms (6000–1800000 ms by default); retrying cannot help` };
  }
  const tls = tlsVerificationFailure(err);
  if (tls !== undefined) return { reason: 'tls', text: `${tls}: check KAFKA_SSL_CA_FILE and the broker address; retrying cannot help` };
  return undefined;
}
