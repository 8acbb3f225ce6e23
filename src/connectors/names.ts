/**
 * Strict rules for names and paths that come from connector files and become consumer groups,
 * topic names, file names or process arguments. Every such value passes one of these before use.
 * Spec: DESIGN "Connectors"; Kafka topic naming (the subscription also names `<subscription>.dlq`).
 */
import { topicNameProblem } from '../core/topic-name.js';

const SUBSCRIPTION = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;
const PATH_SEGMENT = /^[A-Za-z0-9._-]{1,255}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Longest path from a connector file, characters. */
export const MAX_PATH_LENGTH = 1024;

/**
 * Reason when `name` cannot be a connector's subscription name, else undefined: 1–200 characters
 * of [A-Za-z0-9._-] starting with a letter or digit, and `<name>.dlq` must be a legal topic name.
 */
export function subscriptionNameProblem(name: string): string | undefined {
  if (!SUBSCRIPTION.test(name)) return 'subscription names are 1–200 characters of [A-Za-z0-9._-], starting with a letter or digit';
  return topicNameProblem(`${name}.dlq`);
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
const SECRET_LIKE = /PASSW(OR)?D|SECRET|TOKEN|CREDENTIAL|PRIVATE|API_?KEY|ACCESS_?KEY|AUTH|SASL|DATABASE_URL|CONNECTION_STRING|(^|_)DSN$|(^|_)KEY$/i;

/** True when a variable of this name must never be passed from the gateway's environment to a hook. */
export function isSecretLikeName(name: string): boolean {
  return SECRET_LIKE.test(name) || /_FILE$/.test(name);
}
