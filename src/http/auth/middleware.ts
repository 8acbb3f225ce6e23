/**
 * The authentication step of the HTTP server: runs on every request before any route, except the
 * public paths. It authenticates the bearer key, applies the partner's header bound and request
 * rate, and attaches the request's {@link Access} for the routes (`accessOf(req)`).
 * Public (issue 11): `/healthz`, `/readyz`, the documents `/openapi.json`, `/asyncapi.json`,
 * `/asyncapi.yaml`, `/catalog`, `/schemas/json/*` (public kinds only), the console's page and
 * assets (`/console`, `/console/app.js`, `/console/app.css`: no data), `/schemas/ids/*` when
 * `SCHEMAS_AUTH=public` (else a partner's key: the route then checks the partner may read a kind
 * using the schema) and, when `METRICS_AUTH=public`, `/metrics` (else it needs an admin partner).
 * Without partners (`AUTH=none`) every request is the {@link ANONYMOUS} caller, without limits.
 */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../../core/errors.js';
import type { Catalog } from '../../catalog/index.js';
import type { Envelope } from '../../envelope/index.js';
import type { Logger } from '../../observability/index.js';
import { ANONYMOUS, Access, admitEvents } from './access.js';
import { Authenticator } from './authenticate.js';
import { clientAddressOf } from './client-address.js';
import type { ClientAddressOf } from './client-address.js';
import type { AuthOutcome } from './authenticate.js';
import { OidcVerifier } from './oidc.js';
import type { OidcOptions } from './oidc.js';
import type { Partner } from './partners.js';
import { PartnerRateLimits } from './rate-limit.js';

/** Paths anyone may read (issue 11): health, readiness and the public documents. */
// The console's page and assets hold no data (issue 16): a browser loads them without a key; the
// page then sends the operator's key on every data request.
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/openapi.json', '/asyncapi.json', '/asyncapi.yaml', '/catalog', '/console', '/console/app.js', '/console/app.css', '/console/favicon.svg']);

export interface HttpAuthOptions {
  /** undefined: no authentication (`AUTH=none`; the caller is {@link ANONYMOUS}). */
  readonly partners?: readonly Partner[];
  readonly catalog: Catalog;
  /** `GET /metrics`: `public`, or only for admins. */
  readonly metrics: 'public' | 'admin';
  /** `GET /schemas/ids/{id}`: `public`, or for partners (default; the route checks which schemas). */
  readonly schemas?: 'partner' | 'public';
  readonly requestsPerSecond: number;
  readonly eventsPerSecond: number;
  readonly failuresPerMinute: number;
  /** Proxies whose `X-Forwarded-For` is believed for the client address (see client-address.ts); default none. */
  readonly trustedProxies?: readonly string[];
  /** Where audit lines go (the gateway's logger with `component: audit`). */
  readonly audit: Logger;
  /** OIDC bearer tokens mapped to partners (needs `partners`). */
  readonly oidc?: OidcOptions;
  /** Where the gateway's own faults in authentication go (an OIDC key set that cannot be fetched). */
  readonly log?: Logger;
}

/** Result of the step: go on with the request's access, or answer with the error; `headers` go on the answer either way. */
/**
 * One request's authentication: its access, or the refusal. `partner` of a refusal is the id of the
 * partner the credential named when it was refused after authentication (its own rate, its
 * `maxHeaderBytes`, `/metrics` without the admin role), for the refusals log.
 */
export type AuthStep = { readonly ok: true; readonly access: Access; readonly headers: Readonly<Record<string, string>> } | { readonly ok: false; readonly error: GatewayError; readonly headers: Readonly<Record<string, string>>; readonly partner?: string };

/** What the ingress needs of a request's partner: its bounds and the event checks. */
export interface IngressAdmission {
  /** Largest body, bytes, for this partner (undefined: the gateway's). */
  readonly maxBodyBytes?: number;
  /** Most events in a batch for this partner (undefined: the gateway's). */
  readonly maxBatchEvents?: number;
  /**
   * Permissions (403) then the events/s rate (429); `setHeader` receives the `RateLimit` headers.
   * Errors: CEG_FORBIDDEN, CEG_RATE_LIMITED (`details.retryAfterS`).
   */
  admit(events: readonly (Envelope | undefined)[], batch: boolean, setHeader: (name: string, value: string) => void): void;
}

/** Counts since start (for metrics): failed authentications, and 429s by policy. */
export interface AuthStats {
  readonly failures: number;
  readonly limited: { readonly requests: number; readonly events: number; readonly failures: number };
}

export class HttpAuth {
  readonly #o: HttpAuthOptions;
  #stats = { failures: 0, limited: { requests: 0, events: 0, failures: 0 } };
  readonly #authenticator: Authenticator | undefined;
  readonly #rates: PartnerRateLimits;
  readonly #clientAddress: ClientAddressOf;
  readonly #byId: ReadonlyMap<string, Partner> | undefined;

  constructor(o: HttpAuthOptions) {
    this.#o = o;
    this.#byId = o.partners === undefined ? undefined : new Map(o.partners.map((p) => [p.id, p]));
    this.#authenticator =
      o.partners === undefined ? undefined : new Authenticator(o.partners, { failuresPerMinute: o.failuresPerMinute, ...(o.oidc === undefined ? {} : { oidc: new OidcVerifier(o.oidc, o.partners, o.log) }) });
    this.#clientAddress = clientAddressOf(o.trustedProxies);
    this.#rates = new PartnerRateLimits({ requestsPerSecond: o.requestsPerSecond, eventsPerSecond: o.eventsPerSecond });
  }

  /** Counts since start: failed authentications, 429 answers by policy. */
  stats(): AuthStats {
    return { failures: this.#stats.failures, limited: { ...this.#stats.limited } };
  }

  /**
   * The client address failed authentications of `req` are counted against (canonical form;
   * `X-Forwarded-For` believed only from `trustedProxies`): the refusals log keys by it too.
   */
  clientAddress(req: IncomingMessage): string {
    return this.#clientAddress(req);
  }

  /** Whether requests are authenticated (false: `AUTH=none`). */
  get enabled(): boolean {
    return this.#authenticator !== undefined;
  }

  /** Whether `path` (origin-form, no query) is readable without a key. */
  isPublic(path: string): boolean {
    // Schemas by id are the shared registry's (other teams' subjects, internal kinds): not public unless chosen.
    return PUBLIC_PATHS.has(path) || path.startsWith('/schemas/json/') || (path.startsWith('/schemas/ids/') && this.#o.schemas === 'public') || (path === '/metrics' && (this.#o.metrics === 'public' || !this.enabled));
  }

  /**
   * Authenticates `req` (not a public path). Errors (in the outcome): CEG_UNAUTHENTICATED (401),
   * CEG_RATE_LIMITED (429: failed attempts from the address, or the partner's request rate),
   * CEG_HEADERS_TOO_LARGE (431: the partner's `maxHeaderBytes`), CEG_FORBIDDEN (`/metrics`
   * without the admin role), CEG_AUTH_UNAVAILABLE (503: the OIDC key set cannot be fetched).
   */
  check(req: IncomingMessage, path: string): AuthStep | Promise<AuthStep> {
    if (this.#authenticator === undefined) return { ok: true, access: new Access(ANONYMOUS, this.#o.audit), headers: {} };
    const outcome = this.#authenticator.authenticate(req.headersDistinct.authorization, this.#clientAddress(req));
    return outcome instanceof Promise ? outcome.then((o) => this.#admit(req, path, o)) : this.#admit(req, path, outcome);
  }

  #admit(req: IncomingMessage, path: string, outcome: AuthOutcome): AuthStep {
    if (!outcome.ok) {
      if (outcome.error.code === 'CEG_RATE_LIMITED') this.#stats.limited.failures++;
      else if (outcome.error.code !== 'CEG_AUTH_UNAVAILABLE') this.#stats.failures++;
      return outcome;
    }
    const partner = outcome.partner;
    const maxHeaderBytes = partner.limits.maxHeaderBytes;
    if (maxHeaderBytes !== undefined) {
      let bytes = 0;
      for (const h of req.rawHeaders) bytes += Buffer.byteLength(h);
      if (bytes > maxHeaderBytes) {
        return { ok: false, error: new GatewayError('CEG_HEADERS_TOO_LARGE', `the request headers take ${bytes} bytes; partner ${partner.id} may send ${maxHeaderBytes}`, { retriable: false, details: { field: 'headers', limit: 'maxHeaderBytes', max: maxHeaderBytes, actual: bytes } }), headers: {}, partner: partner.id };
      }
    }
    const rate = this.#rates.request(partner);
    if (rate.error !== undefined) {
      this.#stats.limited.requests++;
      return { ok: false, error: rate.error, headers: rate.headers, partner: partner.id };
    }
    const access = new Access(partner, this.#o.audit, this.#byId);
    if (path === '/metrics' && !access.admin) {
      return { ok: false, error: new GatewayError('CEG_FORBIDDEN', '/metrics needs the admin role (or METRICS_AUTH=public)', { retriable: false, details: { permission: 'admin' } }), headers: rate.headers, partner: partner.id };
    }
    return { ok: true, access, headers: rate.headers };
  }

  /** The ingress checks of a request's partner. */
  ingress(access: Access): IngressAdmission {
    const p = access.partner;
    const rates = this.#rates;
    const catalog = this.#o.catalog;
    const limited = this.enabled;
    const stats = this.#stats;
    return {
      ...(p.limits.maxBodyBytes === undefined ? {} : { maxBodyBytes: p.limits.maxBodyBytes }),
      ...(p.limits.maxBatchEvents === undefined ? {} : { maxBatchEvents: p.limits.maxBatchEvents }),
      admit(events, batch, setHeader) {
        admitEvents(p, catalog, events, batch);
        if (!limited) return;
        const n = events.filter((e) => e !== undefined).length;
        if (n === 0) return;
        const r = rates.events(p, n);
        // The events policy is named next to the requests one (both are lists of policies).
        for (const [k, v] of Object.entries(r.headers)) if (k !== 'retry-after') setHeader(k, v);
        if (r.error !== undefined) {
          stats.limited.events++;
          throw r.error;
        }
      },
    };
  }
}
