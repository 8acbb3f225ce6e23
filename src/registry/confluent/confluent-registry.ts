/**
 * Schema registry client for the Confluent REST API, for any compatible registry (Confluent,
 * Apicurio's `/apis/ccompat/v7`, Karapace). undici's `fetch` with a deadline per request, through
 * an undici Agent that trusts the configured CA when one is given (a private CA, issue 11).
 * Why not @kafkajs/confluent-schema-registry: its `register` adds a config round trip, returns no
 * version, and it has no versions list, version-by-number or config write; error mapping and
 * deadlines are simpler to keep exact on one `fetch` path.
 * Spec: Confluent Schema Registry API reference (POST /subjects/{s}/versions, POST /subjects/{s},
 * GET /schemas/ids/{id}, GET /subjects/{s}/versions[/{v}], PUT /config/{s}, GET /config,
 * POST /compatibility/subjects/{s}/versions[/{v}]?verbose=true).
 */
import { Agent, fetch } from 'undici';
import { GatewayError } from '../../core/errors.js';
import type { ErrorCode } from '../../core/errors.js';
import { publicUrl } from '../../core/public-url.js';
import { redact, secretTexts } from '../../core/secret-texts.js';
import { tlsVerificationFailure } from '../../core/tls-errors.js';
import { compatibilityLevels } from '../port.js';
import type { CompatibilityLevel, CompatibilityVerdict, RegisteredSchema, SchemaRegistry } from '../port.js';
import { resolveConfluentOptions } from './options.js';
import type { ConfluentRegistryOptions, ResolvedConfluentOptions } from './options.js';

const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

function isRecord(v: Json): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Confluent `error_code`s of a 404 that say the registry looked and found nothing (Confluent
 * Schema Registry API reference, "Errors"): 40401 subject, 40402 version, 40403 schema (id),
 * 40404 subject soft-deleted, 40406 version soft-deleted, 40408 no subject-level compatibility.
 * Any other 404 (no JSON, no `error_code`, Confluent's own 404 for an unknown route, a proxy's or
 * Apicurio's RESTEasy "could not find resource" page) comes from a URL that is not the API.
 */
const NOT_FOUND_CODES: ReadonlySet<number> = new Set([40401, 40402, 40403, 40404, 40406, 40408]);
/** `error_code` of "subject not found". */
const SUBJECT_NOT_FOUND = 40401;

/** The registry's `error_code` in an error answer, if any. */
function registryCodeOf(body: Json): number | undefined {
  return isRecord(body) && typeof body['error_code'] === 'number' ? body['error_code'] : undefined;
}

/** Whether `err` is the registry's own "subject not found" (error_code 40401), not any 404. */
function isSubjectNotFound(err: unknown): boolean {
  return err instanceof GatewayError && err.code === 'CEG_SCHEMA_NOT_FOUND' && err.details['registryErrorCode'] === SUBJECT_NOT_FOUND;
}

/**
 * The error of an answer that does not come from a Confluent-compatible API: a wrong base URL
 * (e.g. Apicurio without `/apis/ccompat/v7`). Not retriable: asking again gets the same answer.
 * `url` is the address asked, without credentials.
 */
function notTheApi(what: string, url: string, answer: string, details: Record<string, unknown>): GatewayError {
  return new GatewayError(
    'CEG_REGISTRY_UNAVAILABLE',
    `schema registry ${what}: ${url} ${answer}, so the registry URL does not lead to a Confluent-compatible API: check its base path (Apicurio: http://host:port/apis/ccompat/v7; Confluent, Karapace: the server root)`,
    { retriable: false, details: { ...details, url, misconfigured: true } },
  );
}

/**
 * Maps an HTTP error answer to the port's codes. `url`: the address asked, without credentials.
 * `secrets`: the texts of the client's credentials ({@link secretTexts}), taken out of the
 * registry's message, which the error quotes: a registry or a proxy before it that echoes the
 * request in its error (`… auth=Basic dXNlcjpwYXNz`) put the credentials into the gateway's log,
 * `/readyz` and a CI job's output.
 */
function httpError(status: number, body: Json, what: string, details: Record<string, unknown>, url: string, secrets: readonly string[]): GatewayError {
  const registryCode = registryCodeOf(body);
  const registryMessage = isRecord(body) && typeof body['message'] === 'string' ? redact(body['message'], secrets) : '';
  // A 404 is "not found" only when the registry says what it did not find; anything else is a
  // route the server does not have — a misconfigured URL, which must not read as "no versions".
  if (status === 404 && (registryCode === undefined || !NOT_FOUND_CODES.has(registryCode))) {
    return notTheApi(what, url, `answered HTTP 404 ${registryCode === undefined ? 'without a Confluent error_code' : `with error_code ${registryCode}`}`, { ...details, status, ...(registryCode === undefined ? {} : { registryErrorCode: registryCode }) });
  }
  let code: ErrorCode;
  let retriable: boolean;
  if (status === 404) [code, retriable] = ['CEG_SCHEMA_NOT_FOUND', false];
  else if (status === 409) [code, retriable] = ['CEG_SCHEMA_INCOMPATIBLE', false];
  else if (status === 422) [code, retriable] = ['CEG_SCHEMA_INVALID', false];
  else if (status === 408 || status === 429 || status >= 500) [code, retriable] = ['CEG_REGISTRY_UNAVAILABLE', true];
  else [code, retriable] = ['CEG_REGISTRY_UNAVAILABLE', false]; // 401/403/400…: a configuration problem, not transient
  // As the Kafka transport names KAFKA_SASL_* for a refused login: which settings to look at (break pass hE: a bare "HTTP 401" did not).
  const hint = status === 401 ? ': check SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD(_FILE) (or the user info of SCHEMA_REGISTRY_URL); retrying cannot help' : status === 403 ? ': the registry user lacks a permission this call needs (SCHEMA_REGISTRY_USERNAME); retrying cannot help' : '';
  return new GatewayError(code, `schema registry ${what}: HTTP ${status}${registryMessage ? `: ${registryMessage}` : ''}${hint}`, {
    retriable,
    details: { ...details, status, ...(registryCode === undefined ? {} : { registryErrorCode: registryCode }) },
  });
}

function asRegistered(body: Json, what: string): RegisteredSchema {
  if (isRecord(body) && typeof body['subject'] === 'string' && typeof body['version'] === 'number' && typeof body['id'] === 'number' && typeof body['schema'] === 'string') {
    return Object.freeze({ subject: body['subject'], version: body['version'], id: body['id'], schema: body['schema'] });
  }
  throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry ${what}: unexpected answer`, { retriable: false });
}

class ConfluentRegistry implements SchemaRegistry {
  readonly #opts: ResolvedConfluentOptions;
  readonly #byId = new Map<number, Promise<string>>();
  /** undefined = undici's global dispatcher (Node's default trust store). */
  readonly #dispatcher: Agent | undefined;
  /** The credentials as a registry could echo them (the Basic header, its token, user:password, the password). */
  readonly #secrets: readonly string[];

  constructor(opts: ResolvedConfluentOptions) {
    this.#opts = opts;
    this.#secrets = opts.authorization === undefined ? [] : secretTexts({ authorization: opts.authorization }, []);
    this.#dispatcher = opts.ca === undefined ? undefined : new Agent({ connect: { ca: opts.ca } });
  }

  async #request(method: 'GET' | 'POST' | 'PUT', path: string, what: string, details: Record<string, unknown>, body?: Json): Promise<Json> {
    const headers: Record<string, string> = { accept: CONTENT_TYPE };
    if (body !== undefined) headers['content-type'] = CONTENT_TYPE;
    if (this.#opts.authorization !== undefined) headers['authorization'] = this.#opts.authorization;
    let status: number;
    let text: string;
    try {
      const res = await fetch(this.#opts.baseUrl + path, {
        method,
        headers,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.#opts.timeoutMs),
        ...(this.#dispatcher === undefined ? {} : { dispatcher: this.#dispatcher }),
      });
      status = res.status;
      text = await res.text();
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      // A certificate the client does not trust will not be trusted on the next attempt either:
      // a configuration problem (SCHEMA_REGISTRY_CA_FILE), so start-up stops instead of waiting.
      const tls = tlsVerificationFailure(err);
      const reason = timedOut ? `no answer within ${this.#opts.timeoutMs} ms` : tls !== undefined ? `${tls}: check SCHEMA_REGISTRY_CA_FILE and the host of SCHEMA_REGISTRY_URL; retrying cannot help` : err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry ${what}: ${reason}`, {
        retriable: tls === undefined,
        cause: err,
        details: { ...details, method, url: publicUrl(this.#opts.baseUrl + path) },
      });
    }
    let json: Json = null;
    if (text !== '') {
      try {
        json = JSON.parse(text) as Json;
      } catch {
        json = text;
      }
    }
    if (status < 200 || status > 299) throw httpError(status, json, what, details, publicUrl(this.#opts.baseUrl + path), this.#secrets);
    return json;
  }

  async register(subject: string, schema: string): Promise<RegisteredSchema> {
    const s = encodeURIComponent(subject);
    const what = `register under ${subject}`;
    const created = await this.#request('POST', `/subjects/${s}/versions`, what, { subject }, { schema });
    const found = asRegistered(await this.#request('POST', `/subjects/${s}`, what, { subject }, { schema }), what);
    if (isRecord(created) && typeof created['id'] === 'number' && created['id'] !== found.id) {
      throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry ${what}: registered id ${created['id']} but lookup found ${found.id}`, {
        retriable: true,
        details: { subject },
      });
    }
    return found;
  }

  schemaById(id: number): Promise<string> {
    let p = this.#byId.get(id);
    if (p === undefined) {
      const what = `schema id ${id}`;
      p = this.#request('GET', `/schemas/ids/${id}`, what, { id }).then((body) => {
        if (isRecord(body) && typeof body['schema'] === 'string') return body['schema'];
        throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry ${what}: unexpected answer`, { retriable: false });
      });
      this.#byId.set(id, p);
      // A failure is not cached: the next call asks again.
      p.catch(() => this.#byId.delete(id));
    }
    return p;
  }

  async latest(subject: string): Promise<RegisteredSchema> {
    const what = `latest version of ${subject}`;
    return asRegistered(await this.#request('GET', `/subjects/${encodeURIComponent(subject)}/versions/latest`, what, { subject }), what);
  }

  async version(subject: string, version: number): Promise<RegisteredSchema> {
    const what = `version ${version} of ${subject}`;
    if (!Number.isInteger(version) || version < 1) {
      throw new GatewayError('CEG_SCHEMA_NOT_FOUND', `schema registry ${what}: versions are integers ≥ 1`, { retriable: false, details: { subject, version } });
    }
    return asRegistered(await this.#request('GET', `/subjects/${encodeURIComponent(subject)}/versions/${version}`, what, { subject, version }), what);
  }

  async versions(subject: string): Promise<readonly number[]> {
    const path = `/subjects/${encodeURIComponent(subject)}/versions`;
    const what = `versions of ${subject}`;
    let body: Json;
    try {
      body = await this.#request('GET', path, what, { subject });
    } catch (err) {
      // Only the registry's "subject not found" means "no versions"; a check that could not see
      // the history must not pass as if there were none.
      if (isSubjectNotFound(err)) return Object.freeze([]);
      throw err;
    }
    if (!Array.isArray(body) || !body.every((v) => typeof v === 'number')) {
      throw notTheApi(what, publicUrl(this.#opts.baseUrl + path), 'answered something other than a list of version numbers', { subject });
    }
    return Object.freeze(body.slice().sort((a, b) => a - b));
  }

  async subjects(): Promise<readonly string[]> {
    const body = await this.#request('GET', '/subjects', 'listing subjects', {});
    if (!Array.isArray(body) || !body.every((s) => typeof s === 'string')) {
      throw notTheApi('listing subjects', publicUrl(`${this.#opts.baseUrl}/subjects`), 'answered something other than a list of subject names', {});
    }
    return Object.freeze(body.slice());
  }

  async setCompatibility(subject: string, level: CompatibilityLevel): Promise<void> {
    if (!compatibilityLevels.includes(level)) {
      throw new GatewayError('CEG_INVALID_OPTIONS', `unknown compatibility level ${String(level)}`, { retriable: false });
    }
    const put = (): Promise<unknown> => this.#request('PUT', `/config/${encodeURIComponent(subject)}`, `set compatibility of ${subject}`, { subject }, { compatibility: level });
    try {
      await put();
    } catch (err) {
      // Apicurio (ccompat) stores NONE as "no subject rule" and answers 404 for a subject that has
      // no versions yet: there is nothing to relax, so the subject is already at the default.
      if (level === 'NONE' && isSubjectNotFound(err)) return;
      // Apicurio answers 409 "A rule named 'COMPATIBILITY' already exists" when another caller
      // created the subject's rule at the same moment (two gateways starting together): the rule
      // exists now, so setting it again updates it. Without this, the second gateway failed
      // start-up for good.
      if (err instanceof GatewayError && err.code === 'CEG_SCHEMA_INCOMPATIBLE' && /already exists/i.test(err.message)) {
        await put();
        return;
      }
      throw err;
    }
  }

  async testCompatibility(subject: string, schema: string, version?: number | 'latest'): Promise<CompatibilityVerdict> {
    const s = encodeURIComponent(subject);
    const v = version === undefined ? '' : `/${version === 'latest' ? 'latest' : String(version)}`;
    const what = `compatibility check for ${subject}${version === undefined ? '' : ` against version ${version}`}`;
    const body = await this.#request('POST', `/compatibility/subjects/${s}/versions${v}?verbose=true`, what, { subject, ...(version === undefined ? {} : { version }) }, { schema });
    if (!isRecord(body) || typeof body['is_compatible'] !== 'boolean') {
      throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry ${what}: unexpected answer`, { retriable: false, details: { subject } });
    }
    const raw = body['messages'];
    const messages = Array.isArray(raw) ? raw.map((m) => (typeof m === 'string' ? m : JSON.stringify(m))) : [];
    return Object.freeze({ compatible: body['is_compatible'], messages: Object.freeze(messages) });
  }

  async isHealthy(): Promise<boolean> {
    try {
      await this.#request('GET', '/config', 'health check', {});
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * A {@link SchemaRegistry} over the Confluent REST API.
 * Errors (methods): HTTP 404 with a Confluent "not found" error_code (40401 subject, 40402
 *   version, 40403 schema, …) → CEG_SCHEMA_NOT_FOUND (`versions` answers [] for 40401 only),
 *   409 → CEG_SCHEMA_INCOMPATIBLE, 422 → CEG_SCHEMA_INVALID (all retriable: false); connection
 *   refused, deadline (`timeoutMs`), 408, 429, 5xx → CEG_REGISTRY_UNAVAILABLE (retriable: true);
 *   401/403/other 4xx → CEG_REGISTRY_UNAVAILABLE (retriable: false). Any other 404 (no
 *   error_code: a route the server does not have) and a versions list that is not one →
 *   CEG_REGISTRY_UNAVAILABLE (retriable: false, `details.misconfigured: true`, `details.url`
 *   without credentials), the message naming the URL and the API base to use (Apicurio:
 *   `/apis/ccompat/v7`). `schemaById` is single-flight and cached forever (ids are immutable).
 * Errors (creation): CEG_INVALID_OPTIONS (retriable: false).
 */
export function createConfluentRegistry(options: ConfluentRegistryOptions): SchemaRegistry {
  return new ConfluentRegistry(resolveConfluentOptions(options));
}
