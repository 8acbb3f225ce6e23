/**
 * Strict rules for names and paths that come from connector files and become consumer groups,
 * topic names, file names or process arguments. Every such value passes one of these before use.
 * Spec: DESIGN "Connectors"; Kafka topic naming (the subscription also names `<subscription>.dlq`).
 */
import { topicNameProblem } from '../core/topic-name.js';
import { GROUP_PREFIX } from '../bus/subscriptions/model.js';
import { CONFIG_KEYS, SECRET_KEYS } from '../config/config.js';

const SUBSCRIPTION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const PATH_SEGMENT = /^[A-Za-z0-9._-]{1,255}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Longest path from a connector file, characters. */
export const MAX_PATH_LENGTH = 1024;

/**
 * Reason when `name` does not have the form of a subscription name, else undefined: 1–200
 * characters of [A-Za-z0-9._-] starting with a letter or digit (so never `.`, `..` or an option
 * such as `-rf`), and `<name>.dlq` must be a legal topic name. Says nothing about whose group it is:
 * `topics --subscription` may pre-create an HTTP subscription's topics.
 */
export function subscriptionNameFormProblem(name: string): string | undefined {
  if (typeof name !== 'string' || !SUBSCRIPTION.test(name)) return 'subscription names are 1–200 characters of [A-Za-z0-9._-], starting with a letter or digit';
  return topicNameProblem(`${name}.dlq`);
}

/**
 * Reason when `name` cannot be a connector's subscription name (a consumer group this process
 * joins), else undefined: {@link subscriptionNameFormProblem}, and not a group of an HTTP
 * subscription ({@link reservedGroupProblem}).
 */
export function subscriptionNameProblem(name: string): string | undefined {
  return subscriptionNameFormProblem(name) ?? reservedGroupProblem(name);
}

/**
 * Reason when `name`, used as a consumer group (a connector's `subscription`, `subscribe -s`),
 * is one of the groups of HTTP subscriptions (`ce-gateway.sub.<owner>.<name>`), else undefined:
 * a second member of such a group takes part of that subscription's partitions and its events.
 * Exact prefix match, as Kafka compares group ids (a name differing in case is another group).
 * Spec: issue 8 (a subscription's group is `GROUP_PREFIX` + owner + name); Kafka group membership.
 */
export function reservedGroupProblem(name: string): string | undefined {
  if (name.startsWith(GROUP_PREFIX)) {
    return `subscription names starting with ${GROUP_PREFIX} are refused: these consumer groups belong to HTTP subscriptions (a second member would take their events); declare a kind: subscription file or use POST /subscriptions instead`;
  }
  // Another group, but its topics (`<name>.dlq`, …) would collide with an HTTP subscription's:
  // Kafka refuses a topic whose name differs from an existing one only in '.' against '_'.
  if (topicSpelling(name).startsWith(topicSpelling(GROUP_PREFIX))) {
    return `subscription names that Kafka spells like ${GROUP_PREFIX}… ('.' and '_' are the same in topic names) are refused: their topics (${name}.dlq) would collide with an HTTP subscription's`;
  }
  return undefined;
}

/**
 * A topic name as Kafka compares names for collisions: '.' and '_' are the same character (two
 * topics differing only there would share a metric name, so the second is refused).
 * Spec: Kafka `Topic.hasCollision` (InvalidTopicException "collides with existing topics").
 */
export function topicSpelling(name: string): string {
  return name.replaceAll('_', '.');
}

/**
 * Reason when `path` is not an acceptable directory or file path from a connector file, else
 * undefined: absolute or relative, `/`-separated segments of [A-Za-z0-9._-] only (no spaces,
 * no control characters, no `~`, no `$`), no `..` segment, no empty segment (`//`), at most
 * {@link MAX_PATH_LENGTH} characters. A single `.` segment is allowed (`./scripts/x.sh`).
 */
export function pathProblem(path: string): string | undefined {
  if (typeof path !== 'string' || path.length === 0) return 'a path must be a non-empty string';
  if (path.length > MAX_PATH_LENGTH) return `paths are limited to ${MAX_PATH_LENGTH} characters`;
  if (path === '/') return 'the root directory is not allowed';
  const body = path.startsWith('/') ? path.slice(1) : path;
  const segments = body.endsWith('/') ? body.slice(0, -1).split('/') : body.split('/');
  for (const s of segments) {
    if (s === '') return 'paths cannot contain empty segments (//)';
    if (s === '..') return "paths cannot contain '..' segments";
    if (!PATH_SEGMENT.test(s)) return 'path segments are characters of [A-Za-z0-9._-] separated by /';
  }
  return undefined;
}

/** Reason when `name` is not a portable environment variable name ([A-Za-z_][A-Za-z0-9_]*, ≤ 128), else undefined. */
export function envNameProblem(name: string): string | undefined {
  return ENV_NAME.test(name) ? undefined : 'environment variable names are [A-Za-z_][A-Za-z0-9_]* (at most 128 characters)';
}

/** Variables a hook never gets from the gateway's environment: the gateway's own secrets and anything that looks like one. */
// Words are matched as parts of a name split at `_` (MY_PASS, DB_PWD, GH_PAT) or inside one
// (PGPASSWORD, MYSECRET): a short abbreviation only as a whole part, so BYPASS_MODE or PATH pass.
const SECRET_LIKE = /PASSW(OR)?D|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|SASL|COOKIE|BEARER|SESSION|DATABASE_URL|CONNECTION_STRING|(^|_)(PASS|PWD|PW|PAT|CREDS?|DSN|KEY)(_|$)|(^|_)HEADERS$|^OIDC_/i;

/**
 * Variables of the gateway that carry credentials without a secret-like name: the registry URL may
 * hold `user:password@` (README), the OTLP headers carry the collector's auth (matched by the
 * `_HEADERS` pattern too; listed so that a change of pattern keeps them), and `DATABASE_URL`, which
 * `npm run stack:up` writes beside the gateway's settings (the tests' PostgreSQL). The config's own secrets
 * come from {@link SECRET_KEYS}, so a new secret there is refused here without a second list.
 */
const CREDENTIAL_CARRIERS: readonly string[] = ['SCHEMA_REGISTRY_URL', 'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS', 'DATABASE_URL'];
const NEVER_PASSED = new Set([...SECRET_KEYS, ...CREDENTIAL_CARRIERS].map((n) => n.toUpperCase()));

/**
 * True when a variable of this name must never be passed from the gateway's environment to a hook:
 * the config's secrets (`SECRET_KEYS` of src/config/config.ts), variables carrying credentials
 * (`SCHEMA_REGISTRY_URL`, `*_HEADERS` such as `OTEL_EXPORTER_OTLP_HEADERS`, `OIDC_*`), every
 * `*_FILE` (secret files, `PARTNERS_FILE`) and names that look like secrets. Case-insensitive.
 * Spec: DESIGN "Connectors" (a hook's environment is built from nothing); OpenTelemetry SDK
 * environment variables (`OTEL_EXPORTER_OTLP_HEADERS`).
 */
export function isSecretLikeName(name: string): boolean {
  return NEVER_PASSED.has(name.toUpperCase()) || SECRET_LIKE.test(name) || /_FILE$/i.test(name);
}

/** The gateway's own settings that hold or point to credentials: those above, and every setting of the config that looks like one. */
const GATEWAY_CREDENTIALS = new Set([...NEVER_PASSED, ...CONFIG_KEYS.filter((n) => isSecretLikeName(n)).map((n) => n.toUpperCase())]);

/**
 * Reason when a connector file may not read variable `name` into a push delivery's secrets or
 * request headers (`secretsFromEnv`, `headersFromEnv`), else undefined: the gateway's own
 * credentials (`KAFKA_SASL_PASSWORD`, `DATABASE_URL`, `SUBSCRIPTION_SECRETS_KEY`, `OIDC_*`,
 * `SCHEMA_REGISTRY_URL`, their `*_FILE`s…) would be sent to the sink. A variable of the sink's own
 * (`ACME_WEBHOOK_SECRET`) is what these fields are for and is allowed. Case-insensitive.
 * Spec: DESIGN "Connectors"; house rule "secrets only from the environment, never leaked".
 */
export function gatewayCredentialProblem(name: string): string | undefined {
  if (!GATEWAY_CREDENTIALS.has(name.toUpperCase())) return undefined;
  return `${name} is one of the gateway's own credentials and is never sent to a sink; put the sink's value in a variable of its own`;
}
