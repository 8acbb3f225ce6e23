import type { ConnectionOptions } from 'node:tls';
import { GatewayError } from '../../core/errors.js';
import type { KafkaLogLevel, TransportLogger } from './logging.js';
import { silentLogger } from './logging.js';

/** SASL credentials, named as kafkajs names them. */
export interface KafkaSaslOptions {
  readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  readonly username: string;
  readonly password: string;
}

/** Options of the Kafka transport. Units: ms, counts. */
export interface KafkaTransportOptions {
  /** Kafka client id; consumers append `-<group>[-<instanceId>]`. Default 'ce-gateway'. */
  readonly clientId: string;
  /** Bootstrap brokers, `host:port`, at least one. */
  readonly brokers: readonly string[];
  /** TCP connect timeout, ms. Default 3000. */
  readonly connectionTimeoutMs: number;
  /** Per-request timeout, ms. Default 30000. */
  readonly requestTimeoutMs: number;
  /** TLS: true, or Node TLS options (kafkajs `ssl`). Default off. */
  readonly ssl?: boolean | ConnectionOptions;
  /** SASL (kafkajs `sasl`). Default none. */
  readonly sasl?: KafkaSaslOptions;
  /** Receives kafkajs's log and the transport's own. Default: silent. */
  readonly logger: TransportLogger;
  /** Most verbose kafkajs level forwarded to `logger`. Default 'warn' (silent above warn). */
  readonly logLevel: KafkaLogLevel;
  /** kafkajs retries per operation (producer, admin, consumer), a bounded count. Default 5. */
  readonly retries: number;
  /** First retry delay, ms. Default 300. */
  readonly initialRetryTimeMs: number;
  /** Longest retry delay, ms. Default 10000. */
  readonly maxRetryTimeMs: number;
  /**
   * kafkajs's own restarts of a consumer in a row after a crash it calls retriable (it restarts
   * forever otherwise). After them — and after a crash kafkajs calls final whose cause is retriable
   * for the transport — a member that joined once joins again with backoff, as often as it takes
   * (kafka/consumption.ts #rejoinLater); one that never joined fails its start. On
   * @platformatic/kafka: fetches (or start offset look-ups) failing `(retries + 1) × (maxRestarts + 1)`
   * times in a row make a member that joined once join again the same way
   * (platformatic/consumption.ts #rejoinLater). Default 3.
   */
  readonly maxRestarts: number;
  /**
   * Consumer group session timeout, ms (Kafka's `session.timeout.ms`): how long the group
   * coordinator waits for a member's heartbeat before it takes the member out and gives its
   * partitions to the others — how late a crashed or frozen instance's partitions move. The broker
   * refuses a join outside its `group.min.session.timeout.ms`–`group.max.session.timeout.ms`
   * (6000–1800000 by default) with INVALID_SESSION_TIMEOUT. Default 30000.
   */
  readonly sessionTimeoutMs: number;
  /**
   * Consumer heartbeat interval, ms (Kafka's `heartbeat.interval.ms`), below `sessionTimeoutMs`.
   * Default 3000, or a third of `sessionTimeoutMs` when that is less (Kafka's advice: at most a
   * third, so that two lost heartbeats do not end the session).
   */
  readonly heartbeatIntervalMs: number;
  /** Consumer rebalance timeout, ms. Default 60000. */
  readonly rebalanceTimeoutMs: number;
  /** Longest a fetch waits for data, ms (bounds how late an idle member notices a rebalance). Default 1000; consumptions use at most 100 (KAFKAJS_MAX_WAIT_MS in consumption.ts), `tail`/`trace` reads the whole value. */
  readonly maxWaitTimeMs: number;
  /** Partitions a consumer handles at once (each still one record at a time). Default 3. */
  readonly partitionsConsumedConcurrently: number;
  /** Broker-side wait for acks=all on produce, ms. Default 30000. */
  readonly ackTimeoutMs: number;
  /** How long a cached partition count is trusted, ms; kafkajs: also its producer's metadata age. Default 30000. */
  readonly metadataMaxAgeMs: number;
  /**
   * How long a group call outside a consumer's start (committed offsets, commits, resets, group
   * members) waits for a group coordinator that is not there yet, ms. Default 3000
   * (GROUP_CALL_COORDINATOR_WAIT_MS in ../coordinator-wait.ts says why: HTTP callers' budgets).
   */
  readonly groupCallCoordinatorWaitMs: number;
}

const DEFAULTS = {
  clientId: 'ce-gateway',
  connectionTimeoutMs: 3_000,
  requestTimeoutMs: 30_000,
  logger: silentLogger,
  logLevel: 'warn',
  retries: 5,
  initialRetryTimeMs: 300,
  maxRetryTimeMs: 10_000,
  maxRestarts: 3,
  sessionTimeoutMs: 30_000,
  heartbeatIntervalMs: 3_000,
  rebalanceTimeoutMs: 60_000,
  maxWaitTimeMs: 1_000,
  partitionsConsumedConcurrently: 3,
  ackTimeoutMs: 30_000,
  metadataMaxAgeMs: 30_000,
  groupCallCoordinatorWaitMs: 3_000, // GROUP_CALL_COORDINATOR_WAIT_MS (../coordinator-wait.ts)
} as const satisfies Partial<KafkaTransportOptions>;

export type KafkaTransportInput = Partial<KafkaTransportOptions> & Pick<KafkaTransportOptions, 'brokers'>;

const BROKER = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$/;
const CLIENT_ID = /^[A-Za-z0-9._-]{1,200}$/;

/**
 * Resolves the Kafka transport's options once: applies defaults, reports every problem at once,
 * returns a frozen object.
 * Errors: `CEG_INVALID_OPTIONS` (retriable: false) listing each bad field.
 * Spec: STYLE D7 (options validated once); DESIGN "Known traps" (bounded restarts).
 */
export function resolveKafkaTransportOptions(input: KafkaTransportInput): KafkaTransportOptions {
  const given = stripUndefined(input);
  // A session timeout given without a heartbeat interval keeps the heartbeats at most a third of
  // it (3000 for the default 30000): a fixed 3000 would refuse every session timeout ≤ 3000 and
  // leave one heartbeat per session for those up to 9000.
  const heartbeatIntervalMs = given.heartbeatIntervalMs ?? (given.sessionTimeoutMs === undefined ? DEFAULTS.heartbeatIntervalMs : Math.max(1, Math.min(DEFAULTS.heartbeatIntervalMs, Math.floor(given.sessionTimeoutMs / 3))));
  const o: KafkaTransportOptions = { ...DEFAULTS, heartbeatIntervalMs, ...given, brokers: [...(input.brokers ?? [])] };
  const posInt = (v: number): boolean => Number.isInteger(v) && v >= 1;
  const nonNegInt = (v: number): boolean => Number.isInteger(v) && v >= 0;
  const problems = [
    !CLIENT_ID.test(o.clientId) && 'clientId: 1–200 of [A-Za-z0-9._-]',
    (o.brokers.length === 0 || !o.brokers.every((b) => typeof b === 'string' && BROKER.test(b) && Number(b.slice(b.lastIndexOf(':') + 1)) <= 65535)) &&
      'brokers: at least one host:port',
    !posInt(o.connectionTimeoutMs) && 'connectionTimeoutMs: integer ms ≥ 1',
    !posInt(o.requestTimeoutMs) && 'requestTimeoutMs: integer ms ≥ 1',
    o.ssl !== undefined && typeof o.ssl !== 'boolean' && (typeof o.ssl !== 'object' || o.ssl === null) && 'ssl: boolean or TLS options',
    o.sasl !== undefined &&
      !(['plain', 'scram-sha-256', 'scram-sha-512'].includes(o.sasl.mechanism) && typeof o.sasl.username === 'string' && o.sasl.username.length > 0 && typeof o.sasl.password === 'string') &&
      'sasl: { mechanism: plain | scram-sha-256 | scram-sha-512, username, password }',
    !['debug', 'info', 'warn', 'error'].every((m) => typeof (o.logger as unknown as Record<string, unknown>)[m] === 'function') && 'logger: { debug, info, warn, error }',
    !['nothing', 'error', 'warn', 'info', 'debug'].includes(o.logLevel) && 'logLevel: nothing | error | warn | info | debug',
    !nonNegInt(o.retries) && 'retries: integer ≥ 0',
    !posInt(o.initialRetryTimeMs) && 'initialRetryTimeMs: integer ms ≥ 1',
    !(posInt(o.maxRetryTimeMs) && o.maxRetryTimeMs >= o.initialRetryTimeMs) && 'maxRetryTimeMs: integer ms ≥ initialRetryTimeMs',
    !nonNegInt(o.maxRestarts) && 'maxRestarts: integer ≥ 0',
    !posInt(o.sessionTimeoutMs) && 'sessionTimeoutMs: integer ms ≥ 1',
    !(posInt(o.heartbeatIntervalMs) && o.heartbeatIntervalMs < o.sessionTimeoutMs) && 'heartbeatIntervalMs: integer ms < sessionTimeoutMs',
    !posInt(o.rebalanceTimeoutMs) && 'rebalanceTimeoutMs: integer ms ≥ 1',
    !nonNegInt(o.maxWaitTimeMs) && 'maxWaitTimeMs: integer ms ≥ 0',
    !posInt(o.partitionsConsumedConcurrently) && 'partitionsConsumedConcurrently: integer ≥ 1',
    !posInt(o.ackTimeoutMs) && 'ackTimeoutMs: integer ms ≥ 1',
    !nonNegInt(o.metadataMaxAgeMs) && 'metadataMaxAgeMs: integer ms ≥ 0',
    !nonNegInt(o.groupCallCoordinatorWaitMs) && 'groupCallCoordinatorWaitMs: integer ms ≥ 0',
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `kafka transport options: ${problems.join('; ')}`, {
      retriable: false,
      details: { problems },
    });
  }
  return Object.freeze({ ...o, brokers: Object.freeze([...o.brokers]) });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
