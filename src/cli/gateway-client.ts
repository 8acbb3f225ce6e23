/**
 * The CLI's one client of a gateway's HTTP API, for every command that calls a gateway rather than
 * Kafka (`replay`):
 * - **where**: `--gateway <url>`, default PUBLIC_BASE_URL;
 * - **who**: the partner's API key from the environment (or the env file) — `CE_GATEWAY_API_KEY`,
 *   or `CE_GATEWAY_API_KEY_FILE` naming a file that holds it (Docker/Kubernetes secrets; both
 *   set is an error, an empty one counts as unset, as for the gateway's own `<NAME>_FILE`
 *   secrets) — sent as `Authorization: Bearer <key>`. Never from the command line (argv shows in
 *   `ps`), never logged or printed;
 * - **on whose behalf**: `--owner <partner>` (admins: another partner's subscriptions), sent as the
 *   `owner` query parameter on every `/subscriptions…` request the command makes.
 * - **over what**: the key goes over whatever `--gateway` says; over plain `http://` to a host that
 *   is not loopback (127.0.0.0/8, ::1, localhost) the first request that carries it prints one
 *   warning on stderr (the key travels readable by anyone on the path), and goes anyway.
 * Spec: docs/security.md (API keys, `?owner=` for admins); tester report F6.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { NAME_PATTERN } from '../bus/subscriptions/model.js';
import { secretVariable } from '../config/index.js';
import type { Config } from '../config/index.js';
import { GatewayError } from '../core/errors.js';
import { isLoopbackHost } from '../core/loopback.js';
import { printable } from '../core/printable.js';

/** The variables the client reads (besides the gateway's configuration): `ce-gateway config check` knows them. */
export const CLIENT_VARIABLES: readonly string[] = Object.freeze(['CE_GATEWAY_API_KEY', 'CE_GATEWAY_API_KEY_FILE']);

/** What an API key may hold to travel in a header: visible ASCII, no spaces (the keys of docs/security.md are base64url). */
const HEADER_SAFE = /^[\x21-\x7e]{1,4096}$/;

/**
 * The API key: CE_GATEWAY_API_KEY, else the content of the file CE_GATEWAY_API_KEY_FILE (trimmed);
 * undefined when neither is set (an empty variable counts as unset). Error messages name the
 * variable and the file, never the key.
 * Errors: CEG_INVALID_OPTIONS (`field` the variable) for both set, an unreadable or empty file, or
 *   a key a header cannot carry.
 */
export function apiKeyFrom(vars: Readonly<Record<string, string | undefined>>): string | undefined {
  const r = secretVariable(vars, 'CE_GATEWAY_API_KEY');
  const variable = r.variable;
  if ('problem' in r) throw new GatewayError('CEG_INVALID_OPTIONS', `${variable}: ${r.problem}`, { retriable: false, details: { field: variable } });
  if (r.value === undefined) return undefined;
  const key = r.value.trim();
  if (key === '') throw new GatewayError('CEG_INVALID_OPTIONS', variable.endsWith('_FILE') ? `${variable}: ${vars[variable] ?? ''} is empty` : `${variable} is blank`, { retriable: false, details: { field: variable } });
  if (!HEADER_SAFE.test(key)) throw new GatewayError('CEG_INVALID_OPTIONS', `${variable}: an API key is visible ASCII without spaces (up to 4096 characters)`, { retriable: false, details: { field: variable } });
  return key;
}

/**
 * Whether a bearer sent to `url` travels in the clear beyond this machine: plain `http:` to a host
 * that is not loopback (127.0.0.0/8, `::1`, `localhost`; also `::ffff:127.x.y.z`). Pure.
 */
export function keyInTheClear(url: URL): boolean {
  if (url.protocol !== 'http:') return false;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
  if (isLoopbackHost(host)) return false;
  // WHATWG URLs write an IPv4-mapped loopback as hex: [::ffff:7f00:1] is 127.0.0.1.
  const mapped = /^::ffff:([0-9a-f]{1,4}):[0-9a-f]{1,4}$/.exec(host);
  return mapped === null || parseInt(mapped[1]!, 16) >> 8 !== 127;
}

/**
 * `--owner` as commander parses it: a partner id (NAME_PATTERN), for every command that takes one.
 * Errors: commander's InvalidArgumentError (exit 2 with the usage).
 */
export function ownerOption(v: string): string {
  if (!NAME_PATTERN.test(v)) throw new InvalidArgumentError('a partner id: 1–100 of [A-Za-z0-9_-], starting with a letter or digit');
  return v;
}

/** The help lines every command using the client shows after its options. */
export const CLIENT_HELP = `
Authentication (a gateway with PARTNERS_FILE):
  CE_GATEWAY_API_KEY        the partner's API key, sent as Authorization: Bearer <key>
  CE_GATEWAY_API_KEY_FILE   a file holding it (used when CE_GATEWAY_API_KEY is unset)
  The key is read from the environment (or the env file) only, never from the command line, and is
  never printed. Over plain http:// to a host beyond loopback it travels readable by anyone on the
  way: a warning says so (use an https:// --gateway). --owner names another partner's subscription
  (admins).`;

/** Adds `--gateway` and `--owner` to a command that calls a gateway, and the authentication help. */
export function withGatewayOptions(cmd: Command): Command {
  return cmd
    .option('--gateway <url>', "the gateway's base URL (default: PUBLIC_BASE_URL)")
    .option('--owner <partner>', "the subscription's owner, for an admin acting on another partner's subscription (sent as ?owner=)", ownerOption)
    .addHelpText('after', CLIENT_HELP);
}

export interface GatewayAnswer {
  readonly status: number;
  /** Parsed JSON, else the text. */
  readonly body: unknown;
}

export interface GatewayClientOptions {
  /** The gateway's base URL (a trailing `/` is dropped). */
  readonly base: string;
  readonly apiKey?: string;
  readonly owner?: string;
  /** Per request, ms. Default 120 000. */
  readonly timeoutMs?: number;
  /** Where the warning about a key sent in the clear goes (one line); default stderr. */
  readonly warn?: (line: string) => void;
}

export class GatewayClient {
  readonly base: string;
  readonly owner: string | undefined;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #warn: (line: string) => void;
  #warned = false;

  constructor(o: GatewayClientOptions) {
    this.base = o.base.replace(/\/+$/, '');
    this.owner = o.owner;
    this.#apiKey = o.apiKey;
    this.#timeoutMs = o.timeoutMs ?? 120_000;
    this.#warn = o.warn ?? ((line) => void process.stderr.write(`${line}\n`));
  }

  /** Whether requests carry an API key. */
  get authenticated(): boolean {
    return this.#apiKey !== undefined;
  }

  /** `/subscriptions/{name}{suffix}` with the name encoded (the owner is added by {@link call}). */
  static subscriptionPath(name: string, suffix = ''): string {
    return `/subscriptions/${encodeURIComponent(name)}${suffix}`;
  }

  /** The URL of `path`; a `/subscriptions…` path gets `owner` when one is set. */
  url(path: string): string {
    const u = new URL(`${this.base}${path}`);
    if (this.owner !== undefined && (path === '/subscriptions' || path.startsWith('/subscriptions/') || path.startsWith('/subscriptions?'))) u.searchParams.set('owner', this.owner);
    return u.href;
  }

  /**
   * One request; a `body` goes as JSON. Resolves with any status.
   * Errors: fetch's (connection refused, timeout…): their messages name no header.
   */
  async call(method: string, path: string, body?: unknown): Promise<GatewayAnswer> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const url = this.url(path);
    if (this.#apiKey !== undefined) {
      headers.authorization = `Bearer ${this.#apiKey}`;
      // Warned, not refused: a gateway on a private network without TLS is the operator's choice.
      if (!this.#warned && keyInTheClear(new URL(url))) {
        this.#warned = true;
        this.#warn(printable(`ce-gateway: warning: the API key is sent unencrypted over http:// to ${new URL(url).host}; anyone on the network path can read it. Use an https:// --gateway (or PUBLIC_BASE_URL) for a gateway beyond this machine.`));
      }
    }
    const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }), signal: AbortSignal.timeout(this.#timeoutMs) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return { status: res.status, body: parsed };
  }

  /** A refusal as one line for stderr — status, code, detail — with what to do about a 401 or a 404 (printable; never the key). */
  refusal(a: GatewayAnswer): string {
    const p = (typeof a.body === 'object' && a.body !== null ? a.body : {}) as { code?: unknown; detail?: unknown };
    const detail = typeof p.detail === 'string' ? p.detail : typeof a.body === 'string' ? a.body.slice(0, 500) : JSON.stringify(a.body).slice(0, 500);
    let hint = '';
    if (a.status === 401) {
      hint = this.authenticated
        ? ' (the gateway did not accept the API key from CE_GATEWAY_API_KEY or CE_GATEWAY_API_KEY_FILE)'
        : ' (set CE_GATEWAY_API_KEY, or CE_GATEWAY_API_KEY_FILE naming a file that holds it, to the API key; it is never taken from the command line)';
    } else if (a.status === 404 && this.owner === undefined && this.authenticated) {
      hint = " (an admin names another partner's subscription with --owner <partner>)";
    }
    return printable(`${a.status} ${typeof p.code === 'string' ? p.code : ''} ${detail}${hint}`.replace(/\s+/g, ' '));
  }
}

/**
 * Why `base` cannot be a gateway's base URL, else undefined: an absolute `http:` or `https:` URL
 * with no query and no fragment (paths are appended to it: `?a=1` or `#x` would swallow them). A
 * path prefix (a gateway behind a proxy at `/ce`) is fine. Credentials are refused by the caller,
 * which can say so without echoing them. Pure.
 */
export function baseUrlProblem(base: string): string | undefined {
  let u: URL;
  try {
    u = new URL(base);
  } catch {
    return 'not an absolute URL (e.g. http://127.0.0.1:8080)';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return `an http:// or https:// URL, got ${printable(u.protocol)}`;
  if (u.search !== '' || base.includes('?')) return 'a base URL without a query (?…): the API paths are appended to it';
  if (u.hash !== '' || base.includes('#')) return 'a base URL without a fragment (#…): the API paths are appended to it';
  return undefined;
}

/**
 * The client for a command's `--gateway`/`--owner` and the environment.
 * Errors: as {@link apiKeyFrom}; CEG_INVALID_OPTIONS for a base URL {@link baseUrlProblem} refuses.
 */
export function gatewayClient(config: Config, vars: Readonly<Record<string, string | undefined>>, opts: { readonly gateway?: string; readonly owner?: string }): GatewayClient {
  const apiKey = apiKeyFrom(vars);
  const base = opts.gateway ?? config.publicBaseUrl;
  const problem = baseUrlProblem(base);
  if (problem !== undefined) throw new GatewayError('CEG_INVALID_OPTIONS', `${opts.gateway === undefined ? 'PUBLIC_BASE_URL' : '--gateway'}: ${problem}`, { retriable: false, details: { field: opts.gateway === undefined ? 'PUBLIC_BASE_URL' : 'gateway' } });
  return new GatewayClient({ base, ...(apiKey === undefined ? {} : { apiKey }), ...(opts.owner === undefined ? {} : { owner: opts.owner }) });
}
