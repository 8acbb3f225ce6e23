/**
 * Configuration from twelve-factor environment variables (DESIGN "Conventions users already know"),
 * validated once with zod, every problem reported, then frozen. Secrets come only from the
 * environment or from `<NAME>_FILE` secret files, and are never logged.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { usableCpus } from './cpu-count.js';
import proxyAddr from 'proxy-addr';
import { z } from 'zod';
import { GatewayError } from '../core/errors.js';
import { hasUserinfo, takeUserinfo } from '../core/public-url.js';
import { isLoopbackHost } from '../core/loopback.js';
import { discoveryUrlOf } from '../core/oidc-discovery.js';
import { schemaIssues } from '../core/schema-issues.js';
import { MAX_TIMER_MS } from '../core/timer-limit.js';

/** `Number(' ')` is 0: a blank value is refused as no number (NaN), not read as 0. */
const blankIsNaN = (v: unknown): unknown => (typeof v === 'string' && v.trim() === '' ? Number.NaN : v);
/** A whole number from `min` to `max` given as text. */
const intIn = (min: number, max: number = Number.MAX_SAFE_INTEGER) => z.preprocess(blankIsNaN, z.coerce.number({ error: (iss) => (iss.code === 'invalid_type' ? 'a number (the value is blank or not a number)' : undefined) }).int().min(min).max(max));
const port = intIn(0, 65535);
const positiveInt = intIn(1);
/** Milliseconds that become a Node timer: a longer one would fire after 1 ms (core/timer-limit.ts). */
const timerMs = (min: number) => intIn(min, MAX_TIMER_MS);
const logLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
const brokers = z
  .string()
  .transform((s) => s.split(',').map((b) => b.trim()).filter((b) => b !== ''))
  .pipe(z.array(z.string().regex(/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, 'host:port')).min(1));
/** A proxy-addr trust entry: an IP address, a CIDR range, or loopback / linklocal / uniquelocal. */
const isTrustEntry = (e: string): boolean => {
  try {
    proxyAddr.compile(e);
    return true;
  } catch {
    return false;
  }
};
const httpUrl = z.url({ protocol: /^https?$/ });
/** Whether a URL is plain `http:` to a host that is not loopback (false for what does not parse: zod names that). */
const isPlainHttpBeyondLoopback = (url: string): boolean => {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' && !isLoopbackHost(u.hostname.replace(/^\[(.*)\]$/, '$1'));
  } catch {
    return false;
  }
};
const name = z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, ".", "_" or "-"');
/**
 * The Kafka transport's consumer session timeout when KAFKA_SESSION_TIMEOUT_MS is unset, ms
 * (transport/kafka/options.ts `sessionTimeoutMs`; config imports only core, a unit test keeps the
 * two equal). Only for checking KAFKA_HEARTBEAT_INTERVAL_MS against it.
 */
export const DEFAULT_SESSION_TIMEOUT_MS = 30_000;

const schema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  // The plain operations port of `serve` (/metrics, /healthz, /readyz without TLS or partner
  // authentication); unset: none, those routes answer on PORT only.
  OPS_PORT: port.optional(),
  OPS_HOST: z.string().min(1).optional(),
  LOG_LEVEL: logLevel.default('info'),
  BUS_ROLE: z.enum(['publisher', 'subscriber', 'both', 'none']).default('both'),
  SERVICE_NAME: name.default('ce-gateway'),
  INSTANCE_ID: name.default(hostname().replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 100) || 'local'),
  KAFKA_BROKERS: brokers.optional(),
  KAFKA_CLIENT_ID: name.default('ce-gateway'),
  // The Kafka client library behind the transport port (issue 14): @platformatic/kafka, which
  // passes every test kafkajs passes and is the faster client on the bench (BENCHMARKS.md);
  // kafkajs stays supported (KAFKA_CLIENT=kafkajs) and runs in CI.
  KAFKA_CLIENT: z.enum(['kafkajs', 'platformatic']).default('platformatic'),
  KAFKA_SSL: z.enum(['true', 'false']).default('false'),
  // Issue 11: a private CA the Kafka and registry clients trust (PEM files; read at load).
  KAFKA_SSL_CA_FILE: z.string().min(1).optional(),
  // Any letter case: Kafka's own documentation and Java clients spell them `PLAIN`, `SCRAM-SHA-512`.
  KAFKA_SASL_MECHANISM: z.preprocess((v) => (typeof v === 'string' ? v.toLowerCase() : v), z.enum(['plain', 'scram-sha-256', 'scram-sha-512'])).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: z.string().optional(),
  // Kafka's session.timeout.ms / heartbeat.interval.ms of every consumer group member (issue: a
  // dead instance's partitions move after the session timeout). Unset: the transport's defaults,
  // DEFAULT_SESSION_TIMEOUT_MS below and a heartbeat of min(3000, a third of the session).
  KAFKA_SESSION_TIMEOUT_MS: timerMs(2).optional(),
  KAFKA_HEARTBEAT_INTERVAL_MS: timerMs(1).optional(),
  SCHEMA_REGISTRY_URL: httpUrl.optional(),
  SCHEMA_REGISTRY_USERNAME: z.string().optional(),
  SCHEMA_REGISTRY_PASSWORD: z.string().optional(),
  SCHEMA_REGISTRY_CA_FILE: z.string().min(1).optional(),
  CATALOG_DIR: z.string().min(1).optional(),
  DATASCHEMA_BASE_URL: httpUrl.optional(),
  PUBLIC_BASE_URL: httpUrl.optional(),
  CONNECTORS_DIR: z.string().min(1).optional(),
  OUTBOX_DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'a postgres:// URL').optional(),
  // The rule of outboxTable (src/bus/outbox/table.ts): table ≤ 48 characters, schema ≤ 63, the whole ≤ 63.
  OUTBOX_TABLE: z
    .string()
    .regex(/^(?=.{1,63}$)(?:[a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,47}$/, 'table or schema.table of [a-z0-9_], each starting with a letter or _, the table at most 48 characters, the whole at most 63')
    .default('ce_outbox'),
  // At most bus/outbox MAX_OUTBOX_BATCH_SIZE (test/unit/config keeps the two equal; config does not import bus).
  OUTBOX_BATCH_SIZE: intIn(1, 10_000).default(100),
  // bus/outbox DEFAULT_OUTBOX_BATCH_BYTES (16 MiB): bytes per relay cycle, about.
  OUTBOX_BATCH_BYTES: intIn(1).default(16 * 1024 * 1024),
  OUTBOX_POLL_INTERVAL_MS: timerMs(1).default(1000),
  OUTBOX_QUERY_TIMEOUT_MS: timerMs(1).default(10_000),
  // Which topics the relay publishes rows to: any (as Debezium's outbox router) or only the catalog's.
  OUTBOX_TOPICS: z.enum(['any', 'catalog']).default('any'),
  INGRESS_MAX_BODY_BYTES: positiveInt.default(1_048_576),
  INGRESS_MAX_BATCH_EVENTS: positiveInt.default(1000),
  INGRESS_ACK_TIMEOUT_MS: timerMs(1).default(10_000),
  INGRESS_RETRY_AFTER_S: positiveInt.default(5),
  // The envelope's DEFAULT_ENVELOPE_LIMITS (config imports only core; a test keeps them equal).
  INGRESS_MAX_ATTRIBUTES: positiveInt.default(100),
  INGRESS_MAX_ATTRIBUTE_BYTES: positiveInt.default(16_384),
  HTTP_HEADERS_TIMEOUT_MS: timerMs(1).default(10_000),
  HTTP_REQUEST_TIMEOUT_MS: timerMs(1).default(30_000),
  HTTP_MAX_CONNECTIONS: positiveInt.default(1024),
  PUBLISH_QUEUE_CAPACITY: positiveInt.default(10_000),
  READINESS_TIMEOUT_MS: timerMs(1).default(2_000),
  SUBSCRIPTIONS_TOPIC: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,248}$/, 'a Kafka topic name').default('ce-gateway.subscriptions'),
  SUBSCRIPTION_SECRETS_KEY: z.string().regex(/^([0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/, '32 bytes as 64 hex digits or base64 (openssl rand -base64 32)').optional(),
  WEBHOOK_ALLOWED_HOSTS: z.string().optional(),
  WEBHOOK_ALLOWED_PORTS: z.string().optional(),
  WEBHOOK_REQUEST_ORIGIN: z.string().regex(/^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/, 'a host name').optional(),
  // Members on demand (issue 10): 0 keeps a member per active subscription at all times.
  SUBSCRIPTION_IDLE_STOP_MS: timerMs(0).default(30_000),
  SUBSCRIPTION_CHECK_INTERVAL_MS: intIn(100, 60_000).default(1000),
  SUBSCRIPTION_START_CONCURRENCY: intIn(1, 256).default(16),
  // Push subscriptions' fetch linger (issue 8): 0 (default, as Kafka's fetch.min.bytes=1) = none.
  PUSH_FETCH_LINGER_MS: intIn(0, 100).default(0),
  // Long-polls and SSE streams one partner may hold open at once per instance (defect E7).
  PULL_MAX_CONCURRENT_PER_PARTNER: positiveInt.default(32),
  SHUTDOWN_TIMEOUT_MS: timerMs(1).default(10_000),
  // Gateway processes behind one port (node:cluster, issue 14): an integer 1–64 or `auto`.
  GATEWAY_WORKERS: z.union([z.literal('auto'), intIn(1, 64)], { error: 'an integer from 1 to 64, or auto' }).default(1),
  // V8's old-generation growth factor (1 + n/100) for `serve`; unset: V8's own (issue 14, RSS).
  HEAP_GROWING_PERCENT: intIn(1, 1000).optional(),
  // OpenTelemetry's own variable names (OTLP exporter specification): tracing is on when one is set.
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: httpUrl.optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: httpUrl.optional(),
  // Issue 11: partner identity. Unset AUTH = `partners` when PARTNERS_FILE is set, else `none`.
  AUTH: z.enum(['none', 'partners']).optional(),
  PARTNERS_FILE: z.string().min(1).optional(),
  METRICS_AUTH: z.enum(['public', 'admin']).default('admin'),
  SCHEMAS_AUTH: z.enum(['partner', 'public']).default('public'),
  RATE_LIMIT_REQUESTS_PER_S: positiveInt.default(100),
  RATE_LIMIT_EVENTS_PER_S: positiveInt.default(1000),
  AUTH_FAILURES_PER_MINUTE: positiveInt.default(10),
  TRUSTED_PROXIES: z
    .string()
    .transform((s) => s.split(',').map((b) => b.trim()).filter((b) => b !== ''))
    .pipe(z.array(z.string().refine(isTrustEntry, 'an IP address, a CIDR range, or loopback, linklocal, uniquelocal')))
    .default([]),
  OIDC_ISSUER: z.string().min(1).optional(),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  OIDC_JWKS_URL: httpUrl.optional(),
  OIDC_JWKS_FILE: z.string().min(1).optional(),
  OIDC_PARTNER_CLAIM: z.string().regex(/^[A-Za-z0-9_:./-]{1,100}$/, 'a claim name').default('sub'),
  // RFC 9068 §2.1: access tokens are typed `at+jwt`; `*` accepts any `typ` (IdPs that type theirs `JWT`).
  OIDC_TOKEN_TYPES: z
    .string()
    .default('at+jwt')
    .transform((v) => v.split(',').map((t) => t.trim()).filter((t) => t !== ''))
    .pipe(z.array(z.string().regex(/^(\*|[A-Za-z0-9!#$&^_.+-]{1,100}(\/[A-Za-z0-9!#$&^_.+-]{1,100})?)$/, 'a media type such as at+jwt, or *')).min(1)),
  TLS_CERT_FILE: z.string().min(1).optional(),
  TLS_KEY_FILE: z.string().min(1).optional(),
});

export interface Config {
  /**
   * The HTTP server. `headersTimeoutMs`: time to receive a request's headers; `requestTimeoutMs`:
   * time to receive a whole request, body included (both answered 408); `maxConnections`: open
   * connections at most (more are closed at once).
   */
  readonly http: {
    readonly port: number;
    readonly host: string;
    readonly headersTimeoutMs: number;
    readonly requestTimeoutMs: number;
    readonly maxConnections: number;
    /** HTTPS (`TLS_CERT_FILE`, `TLS_KEY_FILE`: PEM files, re-read when they change); undefined = plain HTTP. */
    readonly tls?: { readonly certFile: string; readonly keyFile: string };
  };
  /**
   * `serve`'s operations listener (`OPS_PORT`, `OPS_HOST`, default HOST): plain HTTP, never TLS,
   * no partner authentication, GET/HEAD /metrics, /healthz and /readyz only, answered as on the API
   * port. `port` 0 = any free port; never equal to `http.port` (but both may be 0). undefined = none.
   */
  readonly ops?: { readonly port: number; readonly host: string };
  /**
   * Who may call the HTTP API (issue 11). `mode`: `none` (no authentication; only on a loopback
   * address, checked when the gateway listens) or `partners` (`PARTNERS_FILE`). `metrics`: whether
   * `GET /metrics` is `public` or needs an `admin` partner. Rates per partner unless its entry sets
   * its own: `requestsPerSecond`, `eventsPerSecond` (token buckets holding one second's worth);
   * `failuresPerMinute`: failed authentication attempts per client address before 429.
   */
  readonly auth: {
    readonly mode: 'none' | 'partners';
    readonly partnersFile?: string;
    readonly metrics: 'public' | 'admin';
    /** `GET /schemas/ids/{id}` (`SCHEMAS_AUTH`): `partner` = a partner that may publish or subscribe to a kind using the schema (or an admin); `public` = anyone. */
    readonly schemas: 'partner' | 'public';
    readonly requestsPerSecond: number;
    readonly eventsPerSecond: number;
    readonly failuresPerMinute: number;
    /** Proxies whose `X-Forwarded-For` names the client address (`TRUSTED_PROXIES`); empty: the TCP peer is the client. */
    readonly trustedProxies: readonly string[];
    /** OIDC JWT bearer tokens (`OIDC_*`): issuer, audience, JWKS (URL or file), the claim naming the partner, the accepted header `typ` values (undefined: any). */
    readonly oidc?: { readonly issuer: string; readonly audience: string; readonly jwksUrl?: string; readonly jwksFile?: string; readonly partnerClaim: string; readonly tokenTypes?: readonly string[] };
  };
  readonly logLevel: z.infer<typeof logLevel>;
  /** The process's bus role (bus spec T2); `none` disables the bus. */
  readonly role: 'publisher' | 'subscriber' | 'both' | 'none';
  readonly service: string;
  readonly instance: string;
  /** undefined = the in-memory transport (embedded default, not durable). */
  readonly kafka?: {
    readonly brokers: readonly string[];
    readonly clientId: string;
    /** The client library behind the transport (`KAFKA_CLIENT`): @platformatic/kafka (default) or kafkajs. */
    readonly client: 'kafkajs' | 'platformatic';
    readonly ssl: boolean;
    /**
     * PEM text of the CA certificate(s) that sign the brokers' certificates (`KAFKA_SSL_CA_FILE`,
     * read once at load); undefined = the Node default trust store. Only with `ssl`.
     */
    readonly ca?: string;
    readonly sasl?: { readonly mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; readonly username: string; readonly password: string };
    /**
     * Consumer group session timeout, ms (`KAFKA_SESSION_TIMEOUT_MS`, Kafka's `session.timeout.ms`):
     * a member whose heartbeats stop (a crash, SIGKILL, a frozen process) keeps its partitions this
     * long before the broker gives them to the other members. undefined = the transport's default
     * (30000). The broker bounds it (`group.min.session.timeout.ms`–`group.max.session.timeout.ms`,
     * 6000–1800000 by default) and refuses every member's join outside them.
     */
    readonly sessionTimeoutMs?: number;
    /**
     * Consumer heartbeat interval, ms (`KAFKA_HEARTBEAT_INTERVAL_MS`, Kafka's
     * `heartbeat.interval.ms`), below the session timeout. undefined = the transport's default:
     * 3000, or a third of the session timeout when that is less.
     */
    readonly heartbeatIntervalMs?: number;
  };
  /** undefined = the in-memory registry. */
  readonly registry?: {
    /** Base URL without credentials (those of SCHEMA_REGISTRY_URL's userinfo are in username / password). */
    readonly url: string;
    readonly username?: string;
    readonly password?: string;
    /** PEM text of the CA certificate(s) trusted for an `https` URL (`SCHEMA_REGISTRY_CA_FILE`, read once at load); undefined = Node's default trust store. */
    readonly ca?: string;
  };
  readonly catalogDir?: string;
  /** Public base URL of this gateway's HTTP API, no trailing slash (links in AsyncAPI, `dataschema`). */
  readonly publicBaseUrl: string;
  /** Public base for `dataschema`; the schema id is appended. */
  readonly dataschemaBase: string;
  /** Folder of connector definitions (`*.yaml`) started by `serve`. */
  readonly connectorsDir?: string;
  /** The transactional outbox relay (`ce-gateway outbox relay`): the PRODUCER's database, not the bus's. */
  readonly outbox: { readonly databaseUrl?: string; readonly table: string; readonly batchSize: number; readonly batchBytes: number; readonly pollIntervalMs: number; readonly queryTimeoutMs: number;
    /**
     * `OUTBOX_TOPICS`: `catalog` = the relay produces only rows naming one of its catalog's topics
     * (others are held with CEG_FORBIDDEN; docs/outbox.md "Failures"), `any` (default) = any topic.
     */
    readonly topics: 'any' | 'catalog' };
  /** `limits`: attributes per event (count, bytes), counted on the event as written (envelope/limits). */
  readonly ingress: {
    readonly maxBodyBytes: number;
    readonly maxBatchEvents: number;
    readonly ackTimeoutMs: number;
    readonly retryAfterS: number;
    readonly limits: { readonly maxAttributes: number; readonly maxAttributeBytes: number };
  };
  readonly publishQueueCapacity: number;
  readonly readinessTimeoutMs: number;
  /**
   * Subscriptions as resources (issue 8): the definitions topic; the key sealing their secrets
   * (32 bytes as hex or base64; undefined = none configured); the webhook allow list (host names,
   * addresses, CIDRs, comma-separated); the origin named in validation handshakes.
   */
  readonly subscriptions: {
    readonly topic: string;
    readonly secretsKey?: string;
    readonly allowedHosts?: string;
    /** `WEBHOOK_ALLOWED_PORTS`: ports besides 80 and 443 a webhook to a host that is not allow-listed may use (`*`: any). */
    readonly allowedPorts?: string;
    readonly requestOrigin: string;
    /**
     * How an instance runs many subscriptions (issue 10), ms: a member with no work for
     * `idleStopMs` is stopped (0 = members always run); subscriptions without a member are checked
     * for work every `checkIntervalMs`; `startConcurrency` offset lookups and member starts at once.
     */
    readonly onDemand: { readonly idleStopMs: number; readonly checkIntervalMs: number; readonly concurrency: number };
    /**
     * Fetch linger of the push subscriptions' members, ms (GroupSpec `fetchLingerMs`; 0 = none):
     * after a fetch of a trickle, the next one waits up to this long for more records.
     */
    readonly fetchLingerMs: number;
    /**
     * Pull requests (`GET …/events`) and SSE streams (`GET …/stream`) one caller may have in
     * progress at once on this instance; one more is answered 429 (`PULL_MAX_CONCURRENT_PER_PARTNER`).
     */
    readonly pullMaxConcurrentPerPartner: number;
  };
  /** After SIGTERM/SIGINT, how long the process may take to drain and close before it exits anyway (exit code 1). */
  readonly shutdownTimeoutMs: number;
  /**
   * Gateway processes `serve` runs behind one listening port (`GATEWAY_WORKERS`; node:cluster), 1–64;
   * `auto` resolves at load to the CPUs this process may use: the host's, or the container's CPU
   * limit (cgroup quota) when lower (src/config/cpu-count.ts). 1 (default) = this process serves.
   * More than 1 needs Kafka (each worker is a gateway instance of its own: the in-memory bus is per process).
   */
  readonly workers: number;
  /**
   * V8's old-generation growth factor as a percentage (`--heap-growing-percent`: the heap may grow
   * to (1 + n/100) × what survived the last full GC before the next one), set by `serve` at start.
   * undefined: V8's own heuristics (a factor up to 4: fastest, most memory). Lower = smaller RSS,
   * more CPU per event (BENCHMARKS.md, "Memory"; issue 14's RSS target).
   */
  readonly heapGrowingPercent: number | undefined;
  /**
   * Tracing (issue 15): the OTLP/HTTP traces URL — OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or
   * OTEL_EXPORTER_OTLP_ENDPOINT + `/v1/traces` (OTLP exporter spec). undefined = tracing off.
   */
  readonly tracing?: { readonly endpoint: string };
}

const SECRET_NAMES = ['KAFKA_SASL_PASSWORD', 'SCHEMA_REGISTRY_PASSWORD', 'OUTBOX_DATABASE_URL', 'KAFKA_SASL_USERNAME', 'SCHEMA_REGISTRY_USERNAME', 'SUBSCRIPTION_SECRETS_KEY'] as const;

/**
 * Every environment variable the gateway reads: the settings above, `<NAME>_FILE` for each secret,
 * and `CE_GATEWAY_ENV_FILE` (env-file.ts). Deployment files (compose, Helm) are checked against it.
 */
export const CONFIG_KEYS: readonly string[] = Object.freeze([
  ...Object.keys(schema.shape),
  ...SECRET_NAMES.map((n) => `${n}_FILE`),
  'CE_GATEWAY_ENV_FILE',
]);
/** The variables that hold secrets (never in a ConfigMap, Helm values or an image). */
export const SECRET_KEYS: readonly string[] = Object.freeze([...SECRET_NAMES]);

/** One invalid setting: the variable's name and what is wrong with it (never its value). */
export interface ConfigProblem {
  readonly variable: string;
  readonly message: string;
}

/** Resolves `<NAME>_FILE` secret files (Docker/Kubernetes secrets) into `<NAME>`; unreadable files are problems. */
function withSecretFiles(vars: Record<string, string | undefined>, problems: ConfigProblem[]): Record<string, string | undefined> {
  const out = { ...vars };
  for (const n of SECRET_NAMES) {
    const r = secretVariable(vars, n);
    if ('problem' in r) {
      problems.push({ variable: r.variable, message: r.problem });
      // Said once: the value is not checked as well (it may not be the one meant).
      out[n] = undefined;
    }
    else if (r.variable === `${n}_FILE`) out[n] = r.value;
  }
  for (const [k, v] of Object.entries(out)) if (v === '') out[k] = undefined;
  return out;
}

/**
 * A secret given as the variable `name`, or as the content of the file its `<name>_FILE` names
 * (trimmed; Docker and Kubernetes secrets). An empty variable counts as unset, so it does not hide
 * its `_FILE`. Both set is a problem (`variable` = `name`), as in the official Postgres and MySQL
 * images: which one is meant cannot be told, and picking one silently hid a stale variable behind
 * a login refused by the broker (break pass hE). `variable` says which one gave the value (or
 * failed). The problem text names the file, never its content. Pure but for reading the file.
 */
export function secretVariable(vars: Readonly<Record<string, string | undefined>>, name: string): { readonly value?: string; readonly variable: string } | { readonly problem: string; readonly variable: string } {
  const direct = vars[name];
  const fileVariable = `${name}_FILE`;
  const file = vars[fileVariable];
  const hasFile = file !== undefined && file !== '';
  if (direct !== undefined && direct !== '') return hasFile ? { problem: `set either ${name} or ${fileVariable}, not both (which one is meant cannot be told)`, variable: name } : { value: direct, variable: name };
  if (!hasFile) return { variable: name };
  try {
    const value = readFileSync(file, 'utf8').trim();
    // An empty secret file is a broken mount, not "unset": unset would fall back (a development
    // key on loopback, no registry credentials) without a word.
    if (value === '') return { problem: `${file} is empty`, variable: fileVariable };
    return { value, variable: fileVariable };
  } catch (err) {
    return { problem: `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`, variable: fileVariable };
  }
}

/** Why a base URL's query or fragment cannot stay (`queryToo`: a query is refused as well), or undefined. */
function urlTailProblem(text: string | undefined, queryToo: boolean): string | undefined {
  if (text === undefined || text === '') return undefined;
  if (!URL.canParse(text)) return undefined; // the schema names what does not parse
  if (text.includes('#')) return 'a base URL without a fragment (#…): paths are appended to it';
  if (queryToo && text.includes('?')) return 'a base URL without a query (?…): paths are appended to it';
  return undefined;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;

/**
 * Reads a CA file (`KAFKA_SSL_CA_FILE`, `SCHEMA_REGISTRY_CA_FILE`) at load, so that a missing or
 * wrong file is a start-up problem naming its variable rather than a TLS failure later.
 * Shapes: PEM text holding at least one `CERTIFICATE` block (more = a bundle).
 */
function readCaFile(variable: string, file: string | undefined, problems: ConfigProblem[]): string | undefined {
  if (file === undefined || file === '') return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    problems.push({ variable, message: `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})` });
    return undefined;
  }
  if (!PEM_CERTIFICATE.test(text)) {
    problems.push({ variable, message: `${file} holds no PEM certificate (-----BEGIN CERTIFICATE-----)` });
    return undefined;
  }
  return text;
}

/**
 * Checks every variable and combination at once (`ce-gateway config check`): the frozen Config
 * when all is well, else every problem, each naming its variable. Values — secrets or not — are
 * never part of a message.
 */
export function checkConfig(vars: Record<string, string | undefined>): { readonly config?: Config; readonly problems: readonly ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const raw = withSecretFiles(vars, problems);
  const parsed = schema.safeParse(raw);
  // Each problem names its variable (an entry of a list is named after it).
  if (!parsed.success) {
    for (const i of schemaIssues(parsed.error.issues)) problems.push({ variable: String(i.path[0]), message: `${i.path.length > 1 ? `entry ${i.path.slice(1).join('.')}: ` : ''}${i.message}` });
  }
  // Combination rules are checked on the raw values too, so they are reported with the rest.
  // `auto` is refused without Kafka on any machine, also where it would come to 1: a setting that
  // starts on a 1-CPU laptop must not fail on a 4-CPU server.
  if (parsed.success && parsed.data.GATEWAY_WORKERS !== 1 && parsed.data.KAFKA_BROKERS === undefined) problems.push({ variable: 'GATEWAY_WORKERS', message: parsed.data.GATEWAY_WORKERS === 'auto' ? 'auto (one worker per CPU) needs KAFKA_BROKERS, also where it would come to one worker (the in-memory bus lives in one process)' : 'more than one worker needs KAFKA_BROKERS (the in-memory bus lives in one process)' });
  // A secret whose own variable or file is already a problem is not said missing a second time.
  const secretProblem = (n: string): boolean => problems.some((p) => p.variable === n || p.variable === `${n}_FILE`);
  if (raw.KAFKA_SASL_MECHANISM && (!raw.KAFKA_SASL_USERNAME || !raw.KAFKA_SASL_PASSWORD) && !secretProblem('KAFKA_SASL_USERNAME') && !secretProblem('KAFKA_SASL_PASSWORD')) problems.push({ variable: 'KAFKA_SASL_MECHANISM', message: 'needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD' });
  if (parsed.success && parsed.data.HTTP_HEADERS_TIMEOUT_MS > parsed.data.HTTP_REQUEST_TIMEOUT_MS) problems.push({ variable: 'HTTP_HEADERS_TIMEOUT_MS', message: 'must not exceed HTTP_REQUEST_TIMEOUT_MS (the headers are part of the request)' });
  if (Boolean(raw.SCHEMA_REGISTRY_USERNAME) !== Boolean(raw.SCHEMA_REGISTRY_PASSWORD) && !secretProblem('SCHEMA_REGISTRY_USERNAME') && !secretProblem('SCHEMA_REGISTRY_PASSWORD')) problems.push({ variable: 'SCHEMA_REGISTRY_USERNAME', message: 'goes together with SCHEMA_REGISTRY_PASSWORD: set both or neither' });
  // The group coordinator refuses nothing here, but a heartbeat not more often than the session
  // timeout ends every member's session between two heartbeats (and both clients refuse it).
  if (parsed.success && parsed.data.KAFKA_HEARTBEAT_INTERVAL_MS !== undefined && parsed.data.KAFKA_HEARTBEAT_INTERVAL_MS >= (parsed.data.KAFKA_SESSION_TIMEOUT_MS ?? DEFAULT_SESSION_TIMEOUT_MS)) {
    problems.push({ variable: 'KAFKA_HEARTBEAT_INTERVAL_MS', message: `must be less than KAFKA_SESSION_TIMEOUT_MS (${parsed.data.KAFKA_SESSION_TIMEOUT_MS === undefined ? `default ${DEFAULT_SESSION_TIMEOUT_MS}` : 'as set'}); Kafka advises at most a third of it` });
  }
  const kafkaCa = readCaFile('KAFKA_SSL_CA_FILE', raw.KAFKA_SSL_CA_FILE, problems);
  if (raw.KAFKA_SSL_CA_FILE && raw.KAFKA_SSL !== 'true') problems.push({ variable: 'KAFKA_SSL_CA_FILE', message: 'needs KAFKA_SSL=true (the CA is trusted for TLS connections only)' });
  const registryCa = readCaFile('SCHEMA_REGISTRY_CA_FILE', raw.SCHEMA_REGISTRY_CA_FILE, problems);
  if (raw.SCHEMA_REGISTRY_CA_FILE && !raw.SCHEMA_REGISTRY_URL?.startsWith('https://')) problems.push({ variable: 'SCHEMA_REGISTRY_CA_FILE', message: 'needs an https:// SCHEMA_REGISTRY_URL' });
  // Both are published (the AsyncAPI and OpenAPI documents, every event's `dataschema`): a
  // `user:password@` in them would be handed to every reader, so it is refused, not stripped.
  for (const v of ['PUBLIC_BASE_URL', 'DATASCHEMA_BASE_URL'] as const) {
    if (raw[v] && hasUserinfo(raw[v])) problems.push({ variable: v, message: 'must not hold credentials (user:password@): it is published in the API documents and in events' });
  }
  // Paths are appended to these bases: a query or fragment would end up in the middle of every
  // request's URL (and a PUBLIC_BASE_URL's query, a token say, in the published documents).
  // DATASCHEMA_BASE_URL may end in a query (`…?id=`: the schema id is appended to it), not a fragment.
  for (const v of ['PUBLIC_BASE_URL', 'SCHEMA_REGISTRY_URL', 'DATASCHEMA_BASE_URL'] as const) {
    const problem = urlTailProblem(raw[v], v !== 'DATASCHEMA_BASE_URL');
    if (problem !== undefined) problems.push({ variable: v, message: problem });
  }
  // The ops port is a second listener beside PORT: the same port would fail at listen (EADDRINUSE)
  // or, on another address, answer the probes from a different server than the API's.
  if (parsed.success && parsed.data.OPS_PORT !== undefined && parsed.data.OPS_PORT !== 0 && parsed.data.OPS_PORT === parsed.data.PORT) problems.push({ variable: 'OPS_PORT', message: 'must differ from PORT: the ops port is a second, plain-HTTP listener beside the API\'s' });
  if (raw.OPS_HOST && raw.OPS_PORT === undefined) problems.push({ variable: 'OPS_HOST', message: 'needs OPS_PORT (without it there is no ops listener to bind)' });
  if (raw.AUTH === 'partners' && !raw.PARTNERS_FILE) problems.push({ variable: 'AUTH', message: 'AUTH=partners needs PARTNERS_FILE' });
  if (Boolean(raw.TLS_CERT_FILE) !== Boolean(raw.TLS_KEY_FILE)) problems.push({ variable: 'TLS_CERT_FILE', message: 'goes together with TLS_KEY_FILE: set both or neither' });
  if (['OIDC_ISSUER', 'OIDC_AUDIENCE', 'OIDC_JWKS_URL', 'OIDC_JWKS_FILE'].some((k) => Boolean(raw[k]))) {
    if (!raw.OIDC_ISSUER || !raw.OIDC_AUDIENCE) problems.push({ variable: 'OIDC_ISSUER', message: 'OIDC needs OIDC_ISSUER and OIDC_AUDIENCE (and OIDC_JWKS_URL or OIDC_JWKS_FILE, or neither: the key set is then found through the issuer\'s discovery document)' });
    if (raw.OIDC_JWKS_URL && raw.OIDC_JWKS_FILE) problems.push({ variable: 'OIDC_JWKS_URL', message: 'goes without OIDC_JWKS_FILE: set one of them (or neither, for discovery from OIDC_ISSUER)' });
    // Discovery (OpenID Connect Discovery 1.0 §4): the issuer URL is where the key set's URL comes from.
    if (raw.OIDC_ISSUER && !raw.OIDC_JWKS_URL && !raw.OIDC_JWKS_FILE) {
      try {
        discoveryUrlOf(raw.OIDC_ISSUER);
        if (isPlainHttpBeyondLoopback(raw.OIDC_ISSUER)) problems.push({ variable: 'OIDC_ISSUER', message: 'must be https:// for discovery (plain http:// only to a loopback address): its discovery document names the key set that decides who may sign tokens' });
      } catch (err) {
        problems.push({ variable: 'OIDC_ISSUER', message: err instanceof Error ? err.message.replace(/^OIDC_ISSUER: /, '') : String(err) });
      }
    }
    if (!raw.PARTNERS_FILE) problems.push({ variable: 'PARTNERS_FILE', message: 'OIDC needs PARTNERS_FILE (the token names a partner there, whose permissions apply)' });
    // The key set decides who may sign tokens: over plain http anyone on the path could swap it.
    if (raw.OIDC_JWKS_URL && isPlainHttpBeyondLoopback(raw.OIDC_JWKS_URL)) problems.push({ variable: 'OIDC_JWKS_URL', message: 'must be https:// (plain http:// only to a loopback address): the key set decides who may sign tokens' });
    // A key set is public (RFC 7517 §5): `user:password@` would be a secret in a URL that reaches
    // logs, and Node's fetch refuses such a URL anyway, so every token would be 503 for ever.
    if (raw.OIDC_JWKS_URL && hasUserinfo(raw.OIDC_JWKS_URL)) problems.push({ variable: 'OIDC_JWKS_URL', message: 'must not hold credentials (user:password@): a key set is public, and the URL cannot be fetched with them' });
  }
  if (!parsed.success || problems.length > 0) return { problems };
  return { config: build(parsed.data, { kafka: kafkaCa, registry: registryCa }), problems };
}

/**
 * Builds the frozen Config.
 * Errors: CEG_INVALID_OPTIONS (retriable: false) listing every invalid variable by name (values of
 *   secrets are never echoed); `details.problems` holds them as `VARIABLE: message` lines.
 */
export function loadConfig(vars: Record<string, string | undefined>): Config {
  const { config, problems } = checkConfig(vars);
  if (config === undefined) {
    const lines = problems.map((p) => `${p.variable}: ${p.message}`);
    throw new GatewayError('CEG_INVALID_OPTIONS', `invalid configuration: ${lines.join('; ')}`, { retriable: false, details: { problems: lines } });
  }
  return config;
}

/**
 * The registry settings with credentials given in the URL (`http://user:pw@host/…`) moved to
 * `username` / `password` (SCHEMA_REGISTRY_USERNAME / _PASSWORD win, as in the client's options),
 * so that `url` never holds them: it is published (AsyncAPI `schemaRegistryUrl`) and logged.
 */
function registryOf(text: string, username: string | undefined, password: string | undefined, ca: string | undefined): NonNullable<Config['registry']> {
  const url = new URL(text);
  const { username: user, password: pass } = takeUserinfo(url, username, password);
  // The URL as given (a trailing `/` cut) unless credentials had to be taken out of it.
  const clean = url.toString() === new URL(text).toString() ? text : url.toString();
  return { url: clean.replace(/\/+$/, ''), username: user, password: pass, ...(ca === undefined ? {} : { ca }) };
}

function build(e: z.infer<typeof schema>, ca: { readonly kafka?: string; readonly registry?: string }): Config {

  const publicHost = e.HOST === '0.0.0.0' || e.HOST === '::' ? '127.0.0.1' : e.HOST;
  const scheme = e.TLS_CERT_FILE === undefined ? 'http' : 'https';
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `${scheme}://${publicHost.includes(':') ? `[${publicHost}]` : publicHost}:${e.PORT}`).replace(/\/+$/, '');
  const config: Config = {
    http: {
      port: e.PORT,
      host: e.HOST,
      headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
      maxConnections: e.HTTP_MAX_CONNECTIONS,
      ...(e.TLS_CERT_FILE === undefined || e.TLS_KEY_FILE === undefined ? {} : { tls: { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } }),
    },
    ...(e.OPS_PORT === undefined ? {} : { ops: { port: e.OPS_PORT, host: e.OPS_HOST ?? e.HOST } }),
    auth: {
      mode: e.AUTH ?? (e.PARTNERS_FILE === undefined ? 'none' : 'partners'),
      ...(e.PARTNERS_FILE === undefined ? {} : { partnersFile: e.PARTNERS_FILE }),
      metrics: e.METRICS_AUTH,
      schemas: e.SCHEMAS_AUTH,
      requestsPerSecond: e.RATE_LIMIT_REQUESTS_PER_S,
      eventsPerSecond: e.RATE_LIMIT_EVENTS_PER_S,
      failuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
      trustedProxies: e.TRUSTED_PROXIES,
      ...(e.OIDC_ISSUER === undefined || e.OIDC_AUDIENCE === undefined
        ? {}
        : {
            oidc: {
              issuer: e.OIDC_ISSUER,
              audience: e.OIDC_AUDIENCE,
              ...(e.OIDC_JWKS_URL === undefined ? {} : { jwksUrl: e.OIDC_JWKS_URL }),
              ...(e.OIDC_JWKS_FILE === undefined ? {} : { jwksFile: e.OIDC_JWKS_FILE }),
              partnerClaim: e.OIDC_PARTNER_CLAIM,
              ...(e.OIDC_TOKEN_TYPES.includes('*') ? {} : { tokenTypes: e.OIDC_TOKEN_TYPES }),
            },
          }),
    },
    logLevel: e.LOG_LEVEL,
    role: e.BUS_ROLE,
    service: e.SERVICE_NAME,
    instance: e.INSTANCE_ID,
    kafka: e.KAFKA_BROKERS === undefined ? undefined : {
      brokers: e.KAFKA_BROKERS,
      clientId: e.KAFKA_CLIENT_ID,
      client: e.KAFKA_CLIENT,
      ssl: e.KAFKA_SSL === 'true',
      ...(ca.kafka === undefined ? {} : { ca: ca.kafka }),
      sasl: e.KAFKA_SASL_MECHANISM === undefined ? undefined : { mechanism: e.KAFKA_SASL_MECHANISM, username: e.KAFKA_SASL_USERNAME ?? '', password: e.KAFKA_SASL_PASSWORD ?? '' },
      ...(e.KAFKA_SESSION_TIMEOUT_MS === undefined ? {} : { sessionTimeoutMs: e.KAFKA_SESSION_TIMEOUT_MS }),
      ...(e.KAFKA_HEARTBEAT_INTERVAL_MS === undefined ? {} : { heartbeatIntervalMs: e.KAFKA_HEARTBEAT_INTERVAL_MS }),
    },
    registry: e.SCHEMA_REGISTRY_URL === undefined ? undefined : registryOf(e.SCHEMA_REGISTRY_URL, e.SCHEMA_REGISTRY_USERNAME, e.SCHEMA_REGISTRY_PASSWORD, ca.registry),
    catalogDir: e.CATALOG_DIR,
    publicBaseUrl,
    dataschemaBase: e.DATASCHEMA_BASE_URL ?? `${publicBaseUrl}/schemas/ids/`,
    connectorsDir: e.CONNECTORS_DIR,
    outbox: { databaseUrl: e.OUTBOX_DATABASE_URL, table: e.OUTBOX_TABLE, batchSize: e.OUTBOX_BATCH_SIZE, batchBytes: e.OUTBOX_BATCH_BYTES, pollIntervalMs: e.OUTBOX_POLL_INTERVAL_MS, queryTimeoutMs: e.OUTBOX_QUERY_TIMEOUT_MS, topics: e.OUTBOX_TOPICS },
    ingress: {
      maxBodyBytes: e.INGRESS_MAX_BODY_BYTES,
      maxBatchEvents: e.INGRESS_MAX_BATCH_EVENTS,
      ackTimeoutMs: e.INGRESS_ACK_TIMEOUT_MS,
      retryAfterS: e.INGRESS_RETRY_AFTER_S,
      limits: { maxAttributes: e.INGRESS_MAX_ATTRIBUTES, maxAttributeBytes: e.INGRESS_MAX_ATTRIBUTE_BYTES },
    },
    publishQueueCapacity: e.PUBLISH_QUEUE_CAPACITY,
    readinessTimeoutMs: e.READINESS_TIMEOUT_MS,
    subscriptions: {
      topic: e.SUBSCRIPTIONS_TOPIC,
      secretsKey: e.SUBSCRIPTION_SECRETS_KEY,
      allowedHosts: e.WEBHOOK_ALLOWED_HOSTS,
      allowedPorts: e.WEBHOOK_ALLOWED_PORTS,
      requestOrigin: e.WEBHOOK_REQUEST_ORIGIN ?? new URL(publicBaseUrl).hostname,
      onDemand: { idleStopMs: e.SUBSCRIPTION_IDLE_STOP_MS, checkIntervalMs: e.SUBSCRIPTION_CHECK_INTERVAL_MS, concurrency: e.SUBSCRIPTION_START_CONCURRENCY },
      fetchLingerMs: e.PUSH_FETCH_LINGER_MS,
      pullMaxConcurrentPerPartner: e.PULL_MAX_CONCURRENT_PER_PARTNER,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    workers: e.GATEWAY_WORKERS === 'auto' ? Math.min(64, usableCpus()) : e.GATEWAY_WORKERS,
    heapGrowingPercent: e.HEAP_GROWING_PERCENT,
    tracing:
      e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined
        ? { endpoint: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT }
        : e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined
          ? { endpoint: `${e.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` }
          : undefined,
  };
  return deepFreeze(config);
}

function deepFreeze<T>(o: T): T {
  if (o !== null && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
