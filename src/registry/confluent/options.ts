/**
 * Options of the Confluent REST registry client, validated once and frozen.
 * Spec: Confluent Schema Registry API reference (base URL, HTTP basic auth).
 */
import { GatewayError } from '../../core/errors.js';
import { takeUserinfo } from '../../core/public-url.js';

export interface ConfluentRegistryOptions {
  /** Base URL, e.g. `http://127.0.0.1:8081` or Apicurio's `http://host:8080/apis/ccompat/v7`. */
  readonly url: string;
  /** HTTP basic auth user (with {@link password}); never logged. */
  readonly username?: string;
  /** HTTP basic auth password; never logged. */
  readonly password?: string;
  /** Deadline per HTTP request, ms; default 5000. */
  readonly timeoutMs?: number;
  /**
   * PEM text of the CA certificate(s) to trust for an `https` URL instead of Node's default
   * trust store (`SCHEMA_REGISTRY_CA_FILE`; a private CA, issue 11).
   */
  readonly ca?: string;
}

/** Resolved options; the credentials are folded into a header that is not enumerable. */
export interface ResolvedConfluentOptions {
  /** Base URL without a trailing slash and without credentials. */
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** `Basic …` or undefined. Not enumerable, so it never appears in logs or JSON. */
  readonly authorization: string | undefined;
  /** PEM CA text for TLS, or undefined (Node's default trust store). */
  readonly ca: string | undefined;
}

const DEFAULT_TIMEOUT_MS = 5000;

/**
 * Validates and freezes the options, reporting every problem at once.
 * Credentials embedded in the URL (`http://user:pass@host`) are moved to the header.
 * Errors: GatewayError CEG_INVALID_OPTIONS (retriable: false).
 */
export function resolveConfluentOptions(input: ConfluentRegistryOptions): ResolvedConfluentOptions {
  const problems: string[] = [];
  let url: URL | undefined;
  try {
    url = new URL(input.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') problems.push('url: http or https');
  } catch {
    problems.push('url: an absolute URL');
  }
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) problems.push('timeoutMs: integer milliseconds ≥ 1');
  const { username, password } = url === undefined ? { username: input.username, password: input.password } : takeUserinfo(url, input.username, input.password);
  if ((username === undefined || username === '') !== (password === undefined || password === '')) {
    problems.push('username and password: both or neither');
  }
  if (input.ca !== undefined && url !== undefined && url.protocol !== 'https:') problems.push('ca: only with an https url');
  if (input.ca !== undefined && !input.ca.includes('-----BEGIN CERTIFICATE-----')) problems.push('ca: PEM certificate text');
  if (problems.length > 0 || url === undefined) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `schema registry options: ${problems.join('; ')}`, { retriable: false });
  }
  const resolved = { baseUrl: url.toString().replace(/\/+$/, ''), timeoutMs, ca: input.ca } as ResolvedConfluentOptions;
  Object.defineProperty(resolved, 'authorization', {
    enumerable: false,
    value: username ? `Basic ${Buffer.from(`${username}:${password ?? ''}`).toString('base64')}` : undefined,
  });
  return Object.freeze(resolved);
}
