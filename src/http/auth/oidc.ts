/**
 * OAuth2 / OIDC bearer tokens (JWT access tokens) as partner credentials, verified with `jose`:
 * signature against a JWKS (a file, a URL fetched and cached by `jose`, or — with neither — the
 * `jwks_uri` of the issuer's discovery document, see {@link discoveryUrlOf}), asymmetric algorithms
 * only, `iss` and `aud` as configured, `exp` required, `exp` / `nbf` with 30 s of clock tolerance,
 * an `iat` in the future refused, and the header's `typ` one of `OIDC_TOKEN_TYPES` (default
 * `at+jwt`, so an ID token — `typ: JWT` — is no access token). The claim `OIDC_PARTNER_CLAIM`
 * (default `sub`) names the partner: its value must be the `id` of a partner in PARTNERS_FILE,
 * whose permissions, sources and limits then apply. Tokens never reach a log.
 *
 * A JWKS that cannot be fetched (refused, timed out, not 200, larger than {@link MAX_JWKS_BYTES}
 * or with more than {@link MAX_JWKS_KEYS} keys, not a key set) is the gateway's fault, not the
 * caller's: {@link OidcVerifier.verify} throws CEG_AUTH_UNAVAILABLE (503), one warning is logged
 * per failed fetch (never the URL's userinfo or query), and for {@link JWKS_RETRY_MS} after a failed
 * fetch no new fetch is made — tokens whose key is in a still-fresh cached set keep being verified,
 * every other token gets the same 503 at once. A token whose `kid` is not in the cached set (the
 * identity provider rotated its keys) makes the set be fetched again, at most one fetch at a time
 * and at most once per {@link JWKS_REFETCH_MIN_MS}; the token waits for that fetch (a few seconds at
 * most) and is 401 only if its key is still unknown then.
 * Spec: issue 11 ("Optionally OAuth2 / OIDC JWT bearer tokens (JWKS from a file or URL, claims
 *   mapped to a partner) through a well-kept library"); RFC 9068 (JWT access tokens) §2.1 (`typ`
 *   `at+jwt`), §2.2 (`exp` required), §4 (validation); RFC 7519 §4.1.4, §4.1.6; RFC 8725 §3.11
 *   (explicit typing); OpenID Connect Discovery 1.0 §4 (the document at
 *   `<issuer>/.well-known/openid-configuration`), §4.3 (its `issuer` MUST be identical to the issuer
 *   it was fetched for), §3 (`jwks_uri`).
 */
import type { Stats } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FetchImplementation, JSONWebKeySet, JWTHeaderParameters, JWTVerifyGetKey, FlattenedJWSInput, RemoteJWKSet, jwtVerify } from 'jose';
import { GatewayError } from '../../core/errors.js';
import { isLoopbackHost } from '../../core/loopback.js';
import { discoveryUrlOf } from '../../core/oidc-discovery.js';
import { MAX_TIMER_MS } from '../../core/timer-limit.js';
import { readWatchedFile, watchFileShared } from '../../core/watch-file.js';
import { LogThrottle } from '../../observability/index.js';
import type { Logger } from '../../observability/index.js';
import type { Partner } from './partners.js';

export interface OidcOptions {
  readonly issuer: string;
  readonly audience: string;
  /** JWKS URL (fetched by `jose`, cached, refreshed on an unknown `kid`). */
  readonly jwksUrl?: string;
  /**
   * JWKS file: read at start, and again each time it changes on disk (looked at every
   * {@link JWKS_FILE_WATCH_INTERVAL_MS} while `stop` is not aborted): a rotation that adds the new
   * key to the file before tokens are signed with it needs no restart. A change that is no readable
   * JWKS (or the file removed) keeps the keys read before, with a warning.
   */
  readonly jwksFile?: string;
  /** Aborted when the gateway closes: ends the watch of `jwksFile`. Without it the file is read once. */
  readonly stop?: AbortSignal;
  /*
   * Neither `jwksUrl` nor `jwksFile`: the key set's URL is the `jwks_uri` of the issuer's discovery
   * document, fetched on the first token (then `issuer` must be an https URL, plain http only to a
   * loopback address; config checks it).
   */
  /** The claim whose value is the partner id. */
  readonly partnerClaim: string;
  /**
   * Accepted values of the JWS header `typ`, compared as RFC 8725 §3.11 says (case-insensitive,
   * an `application/` prefix ignored); undefined: any `typ`, or none. Default (config): `at+jwt`.
   */
  readonly tokenTypes?: readonly string[];
  /**
   * The key set fetch's timing, ms, each an integer ≥ 1: `refetchMinMs` (default
   * {@link JWKS_REFETCH_MIN_MS}), `retryMs` ({@link JWKS_RETRY_MS}), `timeoutMs`
   * ({@link JWKS_TIMEOUT_MS}). Not operator settings (createGateway's `oidcJwksTimings` sets them):
   * tests shorten them.
   */
  readonly jwksTimings?: { readonly refetchMinMs?: number; readonly retryMs?: number; readonly timeoutMs?: number };
}

/** Asymmetric signatures only: a shared-secret HS256 token would make every JWKS holder a signer. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** Clock skew allowed on `exp`, `nbf` and `iat`, seconds. */
const CLOCK_TOLERANCE_S = 30;
/** After a failed JWKS fetch, ms during which no new fetch is made (every uncached token gets 503). */
export const JWKS_RETRY_MS = 5000;
/**
 * Least time between two fetches of the key set for a `kid` it does not hold, ms (`jose`'s
 * cooldown): a key rotation is picked up within this, while tokens with made-up `kid`s cannot make
 * the gateway hammer the identity provider.
 */
export const JWKS_REFETCH_MIN_MS = 5000;
/** Time allowed for one JWKS fetch (headers and body), ms. */
export const JWKS_TIMEOUT_MS = 5000;
/**
 * Largest JWKS answer read, bytes (1 MiB). A key set is a few KiB (an RSA-4096 key is ~0.8 KiB of
 * JSON); without a bound a broken or hostile endpoint could make the gateway buffer and parse
 * hundreds of MB. A larger answer is a failed fetch.
 */
export const MAX_JWKS_BYTES = 1_048_576;
/** Most keys in a JWKS (RFC 7517 §5 `keys`); identity providers publish a handful. More: a failed fetch. */
export const MAX_JWKS_KEYS = 100;
/** Least time between two warnings about failed JWKS fetches, ms (later failures are counted in `repeated`). */
export const JWKS_LOG_INTERVAL_MS = 30_000;
/** Errors of the key lookup that are the token's fault (its `kid` / `alg` matches no usable key). */
const TOKEN_KEY_ERRORS: ReadonlySet<string> = new Set(['ERR_JWKS_NO_MATCHING_KEY', 'ERR_JWKS_MULTIPLE_MATCHING_KEYS', 'ERR_JOSE_NOT_SUPPORTED', 'ERR_JOSE_ALG_NOT_ALLOWED']);

/** Whether a bearer credential has the shape of a JWS compact serialization (three base64url parts). */
export function looksLikeJwt(credential: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(credential);
}

/** A `typ` value as RFC 8725 §3.11 / RFC 7515 §4.1.9 compare it: lowercase, without `application/`. */
function normalizeTyp(typ: string): string {
  const t = typ.toLowerCase();
  return t.startsWith('application/') ? t.slice('application/'.length) : t;
}

/**
 * `text` with every URL in it cut to its origin and path: userinfo, query and fragment may hold a
 * credential (Node's fetch puts the whole URL into some messages: "Request cannot be constructed
 * from a URL that includes credentials: http://user:pass@…").
 */
export function withoutUrlSecrets(text: string): string {
  return text.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/[^\s"'<>]*/g, (url) => {
    try {
      const u = new URL(url);
      return `${u.origin}${u.pathname}`;
    } catch {
      return url.replace(/^([^:]+:\/\/)[^/?#]*@/, '$1').replace(/[?#].*$/, '');
    }
  });
}

/** A failed fetch's error as logged: its message and its cause's (Node's "fetch failed" says why only there), without URL secrets. */
function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return withoutUrlSecrets(String(err));
  const cause = err.cause instanceof Error && err.cause.message !== '' ? `: ${err.cause.message}` : '';
  return withoutUrlSecrets(`${err.message}${cause}`);
}

/**
 * The body of a 200 answer as text, at most `maxBytes` read (bytes; by `content-length` or as read).
 * Errors: not 200, larger than the bound — each naming `what`.
 */
async function readBoundedText(res: Response, maxBytes: number, what: string): Promise<string> {
  if (res.status !== 200 || res.body === null) {
    await res.body?.cancel();
    throw new Error(`${what} answered HTTP ${res.status}, not 200`);
  }
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > maxBytes) {
    await res.body.cancel();
    throw new Error(`the answer of ${what} is larger than ${maxBytes} bytes (content-length ${declared})`);
  }
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new Error(`the answer of ${what} is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * `fetch` for `jose`'s remote key set that reads at most {@link MAX_JWKS_BYTES} of the answer and
 * accepts at most {@link MAX_JWKS_KEYS} keys; `fetched` is called after each good answer with the
 * time (epoch ms) its request was sent.
 * Errors (rejections, a failed fetch for the caller): not 200, larger than the bound (by
 * `content-length` or as read), not JSON, too many keys; the fetch's own (refused, timed out).
 */
function boundedFetch(fetched: (sentAt: number) => void): FetchImplementation {
  return async (url, init) => {
    const sentAt = Date.now();
    const text = await readBoundedText(await fetch(url, init), MAX_JWKS_BYTES, "the key set's URL");
    let keys: unknown;
    try {
      keys = (JSON.parse(text) as { keys?: unknown }).keys;
    } catch {
      throw new Error("the key set's answer is not JSON");
    }
    if (Array.isArray(keys) && keys.length > MAX_JWKS_KEYS) throw new Error(`the key set has ${keys.length} keys, more than ${MAX_JWKS_KEYS}`);
    fetched(sentAt);
    // `jose` checks the rest (a `keys` array of JWKs, RFC 7517 §5) and selects the key.
    return new Response(text, { status: 200, headers: { 'content-type': 'application/json' } });
  };
}

const codeOf = (err: unknown): string | undefined => (typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : undefined);

interface Loaded {
  readonly jwtVerify: typeof jwtVerify;
  readonly keys: JWTVerifyGetKey;
}

/**
 * The key set of `OIDC_JWKS_FILE` (RFC 7517 §5: a JSON object with a `keys` array), read at start
 * and by `ce-gateway config check`.
 * Errors: CEG_INVALID_OPTIONS (retriable: false) when the file cannot be read or is not a JWKS.
 */
export function readJwksFile(file: string): JSONWebKeySet {
  return readJwksFileWithStats(file).jwks;
}

/** How often a watched OIDC_JWKS_FILE is looked at, ms (one stat call). */
export const JWKS_FILE_WATCH_INTERVAL_MS = 2000;

/** {@link readJwksFile} with the file's stats taken before its bytes (the watch's baseline). Errors: as readJwksFile. */
function readJwksFileWithStats(file: string): { readonly jwks: JSONWebKeySet; readonly stats: Stats } {
  try {
    const read = readWatchedFile(file);
    const jwks = JSON.parse(read.data.toString('utf8')) as JSONWebKeySet;
    if (!Array.isArray(jwks.keys)) throw new Error('no "keys" array');
    return { jwks, stats: read.stats };
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `OIDC_JWKS_FILE: ${file} is not a readable JWKS`, { retriable: false, cause: err });
  }
}

/** Largest discovery document read, bytes (64 KiB; providers publish a few KiB). Larger: a failed discovery. */
export const MAX_DISCOVERY_BYTES = 65_536;

/** Whether a URL's hostname (IPv6 in brackets) is a loopback address. */
const isLoopback = (hostname: string): boolean => isLoopbackHost(hostname.replace(/^\[(.*)\]$/, '$1'));

/**
 * The `jwks_uri` of a discovery document, checked: a JSON object whose `issuer` is identical to
 * `issuer` and whose `jwks_uri` is an https URL (plain http only when the document itself came over
 * plain http to a loopback address) without userinfo.
 * Spec: OpenID Connect Discovery 1.0 §3 (`jwks_uri` REQUIRED), §4.3 (issuer identical, else the
 * document MUST NOT be used).
 * Errors: Error naming the field that is wrong (a failed discovery for the caller).
 */
export function jwksUriOfDiscovery(text: string, issuer: string, documentUrl: URL): URL {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error('the discovery document is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('the discovery document is not a JSON object');
  const d = doc as { issuer?: unknown; jwks_uri?: unknown };
  if (d.issuer !== issuer) throw new Error(`the discovery document's "issuer" (${JSON.stringify(d.issuer)?.slice(0, 200)}) is not OIDC_ISSUER exactly (OpenID Connect Discovery §4.3)`);
  if (typeof d.jwks_uri !== 'string') throw new Error('the discovery document has no "jwks_uri" string');
  let jwks: URL;
  try {
    jwks = new URL(d.jwks_uri);
  } catch {
    throw new Error('the discovery document\'s "jwks_uri" is not a URL');
  }
  const plainAllowed = documentUrl.protocol === 'http:' && isLoopback(documentUrl.hostname) && isLoopback(jwks.hostname);
  if (!(jwks.protocol === 'https:' || (jwks.protocol === 'http:' && plainAllowed))) throw new Error('the discovery document\'s "jwks_uri" is not https (the key set decides who may sign tokens)');
  if (jwks.username !== '' || jwks.password !== '') throw new Error('the discovery document\'s "jwks_uri" holds user:password@');
  return jwks;
}

export class OidcVerifier {
  readonly #o: OidcOptions;
  /** The key set fetch's timing, ms ({@link OidcOptions.jwksTimings} over the defaults). */
  readonly #t: { readonly refetchMinMs: number; readonly retryMs: number; readonly timeoutMs: number };
  /** The key source: a JWKS read from the file (at construction, again on each change), the JWKS URL, or the issuer's discovery document's URL. */
  #source: { readonly jwks: JSONWebKeySet } | { readonly url: URL } | { readonly discovery: URL };
  readonly #partners: ReadonlyMap<string, Partner>;
  readonly #types: ReadonlySet<string> | undefined;
  readonly #log: Logger | undefined;
  /** `jose` and the key set, made on the first token: a gateway without OIDC never loads `jose`. */
  #verifier: Promise<Loaded> | undefined;
  /** Until when (epoch ms) no JWKS fetch is made, after one failed. */
  #downUntil = 0;
  /** When (epoch ms) the request of the last successful key-set fetch was sent. */
  #fetchedAt = 0;
  /** The wait for the end of `jose`'s cooldown, shared by every token with an unknown `kid`. */
  #cooldownOver: Promise<void> | undefined;
  /** Failed JWKS fetches: one warning per {@link JWKS_LOG_INTERVAL_MS}, the others counted. */
  readonly #failureLines = new LogThrottle(JWKS_LOG_INTERVAL_MS, () => Date.now());

  /**
   * Errors: CEG_INVALID_OPTIONS when the JWKS file cannot be read or is not a JWKS, the JWKS URL
   * holds userinfo (config refuses it first; fetch would refuse it on every token), discovery is
   * used (no JWKS URL or file) and the issuer is no https URL (plain http only to loopback), or a
   * `jwksTimings` value is not an integer ms from 1 to 2^31 − 1.
   */
  constructor(o: OidcOptions, partners: readonly Partner[], log?: Logger) {
    this.#t = { refetchMinMs: o.jwksTimings?.refetchMinMs ?? JWKS_REFETCH_MIN_MS, retryMs: o.jwksTimings?.retryMs ?? JWKS_RETRY_MS, timeoutMs: o.jwksTimings?.timeoutMs ?? JWKS_TIMEOUT_MS };
    const bad = Object.entries(this.#t).filter(([, v]) => !(Number.isInteger(v) && v >= 1 && v <= MAX_TIMER_MS)).map(([k]) => k);
    if (bad.length > 0) throw new GatewayError('CEG_INVALID_OPTIONS', `oidc jwksTimings: ${bad.join(', ')}: an integer from 1 to ${MAX_TIMER_MS} ms`, { retriable: false, details: { problems: bad } });
    this.#o = o;
    this.#log = log;
    this.#partners = new Map(partners.map((p) => [p.id, p]));
    this.#types = o.tokenTypes === undefined ? undefined : new Set(o.tokenTypes.map(normalizeTyp));
    if (o.jwksFile !== undefined) {
      const read = readJwksFileWithStats(o.jwksFile);
      this.#source = { jwks: read.jwks };
      if (o.stop !== undefined) this.#watchJwksFile(o.jwksFile, read.stats, o.stop);
    } else if (o.jwksUrl !== undefined) {
      const url = new URL(o.jwksUrl);
      if (url.username !== '' || url.password !== '') throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC_JWKS_URL must not hold credentials (user:password@)', { retriable: false });
      this.#source = { url };
    } else {
      const discovery = discoveryUrlOf(o.issuer);
      if (discovery.protocol === 'http:' && !isLoopback(discovery.hostname)) throw new GatewayError('CEG_INVALID_OPTIONS', 'OIDC_ISSUER must be https:// for discovery (plain http:// only to a loopback address)', { retriable: false });
      this.#source = { discovery };
    }
  }

  /**
   * Reads the JWKS file again on each change; the next token is verified against the new keys
   * (tokens already being verified finish against the old ones). Shared poll per path (core/watch-file.ts).
   */
  #watchJwksFile(file: string, loaded: Stats, stop: AbortSignal): void {
    watchFileShared(file, loaded, JWKS_FILE_WATCH_INTERVAL_MS, (curr) => {
      if (curr === undefined) {
        this.#log?.warn({ file }, 'OIDC_JWKS_FILE removed: the keys read before stay in use');
        return;
      }
      let jwks: JSONWebKeySet;
      try {
        jwks = readJwksFile(file);
      } catch (err) {
        this.#log?.warn({ file, err: describeFailure(err) }, 'OIDC_JWKS_FILE changed on disk but is no readable JWKS: the keys read before stay in use');
        return;
      }
      this.#source = { jwks };
      this.#verifier = undefined;
      this.#log?.info({ file, keys: jwks.keys.length }, 'OIDC_JWKS_FILE changed on disk: its keys are in use');
    }, stop);
  }

  /**
   * The key set's URL from the issuer's discovery document ({@link jwksUriOfDiscovery}), read with
   * the key set's timeout and at most {@link MAX_DISCOVERY_BYTES}.
   * Errors: any failure to fetch or use the document (the caller answers 503).
   */
  async #discover(documentUrl: URL): Promise<URL> {
    const res = await fetch(documentUrl, { signal: AbortSignal.timeout(this.#t.timeoutMs), headers: { accept: 'application/json' } });
    return jwksUriOfDiscovery(await readBoundedText(res, MAX_DISCOVERY_BYTES, 'the discovery document URL'), this.#o.issuer, documentUrl);
  }

  #unavailable(retryAfterMs: number, cause?: unknown): GatewayError {
    const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return new GatewayError('CEG_AUTH_UNAVAILABLE', `the identity provider's key set (JWKS) cannot be fetched: tokens cannot be verified now; retry in ${retryAfterS} s (API keys still work)`, {
      retriable: true,
      cause,
      details: { retryAfterS },
    });
  }

  #load(): Promise<Loaded> {
    const source = this.#source;
    this.#verifier ??= import('jose').then(async (jose) => {
      if ('jwks' in source) return { jwtVerify: jose.jwtVerify, keys: jose.createLocalJWKSet(source.jwks) };
      const jwksUrl = 'url' in source ? source.url : await this.#discover(source.discovery);
      // jose fetches at most one set at a time (concurrent lookups share it) and, for an unknown kid,
      // again only once its cooldown has passed since the last good fetch.
      const remote = jose.createRemoteJWKSet(jwksUrl, {
        timeoutDuration: this.#t.timeoutMs,
        cooldownDuration: this.#t.refetchMinMs,
        [jose.customFetch]: boundedFetch((sentAt) => (this.#fetchedAt = Math.max(this.#fetchedAt, sentAt))),
      });
      const where = `${jwksUrl.origin}${jwksUrl.pathname}`; // the query may hold a credential
      const keys = async (header: JWTHeaderParameters, token: FlattenedJWSInput, arrived = Date.now()): Promise<Awaited<ReturnType<JWTVerifyGetKey>>> => {
        const waitMs = this.#downUntil - Date.now();
        if (waitMs > 0) {
          // No fetch while the last one failed: only a fresh cached set may still answer.
          const cached = remote.fresh ? remote.jwks() : undefined;
          if (cached === undefined) throw this.#unavailable(waitMs);
          try {
            return await jose.createLocalJWKSet(cached)(header, token);
          } catch (err) {
            // An unknown kid may be a key published since: that cannot be known until a fetch works.
            if (codeOf(err) === 'ERR_JWKS_NO_MATCHING_KEY') throw this.#unavailable(waitMs, err);
            throw err;
          }
        }
        try {
          return await remote(header, token);
        } catch (err) {
          if (codeOf(err) === 'ERR_JWKS_NO_MATCHING_KEY' && remote.coolingDown && this.#fetchedAt < arrived) {
            // The kid is not in a set fetched before the token arrived (less than JWKS_REFETCH_MIN_MS
            // ago, and jose fetches no other before then): the key may have been published since (a
            // rotation). A 401 now would refuse a good token and count it as a failed login, so the
            // token waits for the next fetch allowed (one for all such tokens) and is looked up once
            // more; a set fetched after its arrival is the answer (401 if the kid is not in it).
            await this.#afterCooldown(remote);
            return keys(header, token, arrived);
          }
          if (TOKEN_KEY_ERRORS.has(codeOf(err) ?? '')) throw err;
          const now = Date.now();
          // Every token waiting on one fetch gets its failure: the first marks the incident, logs it.
          if (this.#downUntil > now) throw this.#unavailable(this.#downUntil - now, err);
          this.#downUntil = now + this.#t.retryMs;
          this.#failureLines.run((repeated) =>
            this.#log?.warn({ jwks: where, err: describeFailure(err), retryInMs: this.#t.retryMs, ...(repeated > 0 ? { repeated } : {}) }, 'oidc: the JWKS cannot be fetched; tokens whose key is not cached get 503 CEG_AUTH_UNAVAILABLE'),
          );
          throw this.#unavailable(this.#t.retryMs, err);
        }
      };
      return { jwtVerify: jose.jwtVerify, keys };
    });
    return this.#verifier;
  }

  /** Resolves once `jose` may fetch the key set again (its cooldown over); at most the refetch minimum ({@link JWKS_REFETCH_MIN_MS} by default) + 1 s. */
  #afterCooldown(remote: RemoteJWKSet): Promise<void> {
    this.#cooldownOver ??= (async () => {
      const deadline = Date.now() + this.#t.refetchMinMs + 1000;
      // jose stamps its fetch a moment after boundedFetch's `fetched`: wait for that stamp, then poll.
      while (remote.coolingDown && Date.now() < deadline) await sleep(Math.max(10, this.#fetchedAt + this.#t.refetchMinMs - Date.now()), undefined, { ref: false });
    })().finally(() => (this.#cooldownOver = undefined));
    return this.#cooldownOver;
  }

  /**
   * The partner a valid token names; undefined for any invalid token (signature, issuer, audience,
   * `typ`, a missing `exp`, expiry, `nbf`, an `iat` in the future, unknown partner).
   * Errors: CEG_AUTH_UNAVAILABLE (retriable; `details.retryAfterS`) when the JWKS cannot be fetched.
   */
  async verify(token: string): Promise<Partner | undefined> {
    let loaded: Loaded;
    // A discovery (or load) that failed is not tried again before the retry delay: every token meanwhile gets 503.
    const downMs = this.#verifier === undefined ? this.#downUntil - Date.now() : 0;
    if (downMs > 0) throw this.#unavailable(downMs);
    const loading = this.#load();
    try {
      loaded = await loading;
    } catch (err) {
      // Tokens that waited on this one attempt share its failure; the first marks it and logs.
      if (this.#verifier === loading) {
        this.#verifier = undefined;
        this.#downUntil = Date.now() + this.#t.retryMs;
        const source = this.#source;
        this.#failureLines.run((repeated) =>
          'discovery' in source
            ? this.#log?.warn({ discovery: `${source.discovery.origin}${source.discovery.pathname}`, err: describeFailure(err), retryInMs: this.#t.retryMs, ...(repeated > 0 ? { repeated } : {}) }, "oidc: the issuer's discovery document cannot be fetched or used; tokens get 503 CEG_AUTH_UNAVAILABLE")
            : this.#log?.error({ err: describeFailure(err) }, 'oidc: the verifier cannot be loaded'),
        );
      }
      throw this.#unavailable(this.#t.retryMs, err);
    }
    try {
      const { payload, protectedHeader } = await loaded.jwtVerify(token, loaded.keys, {
        issuer: this.#o.issuer,
        audience: this.#o.audience,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_TOLERANCE_S,
        requiredClaims: ['exp'],
      });
      if (this.#types !== undefined && (typeof protectedHeader.typ !== 'string' || !this.#types.has(normalizeTyp(protectedHeader.typ)))) return undefined;
      // jose checks `iat` only with maxTokenAge; a token issued in the future is forged or from a broken clock.
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S) return undefined;
      const id = payload[this.#o.partnerClaim];
      return typeof id === 'string' ? this.#partners.get(id) : undefined;
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'CEG_AUTH_UNAVAILABLE') throw err;
      return undefined;
    }
  }
}
