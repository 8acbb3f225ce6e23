/**
 * Lists a Confluent-compatible registry's subjects, which the registry port does not offer: the
 * schema check needs it to find a kind's earlier subject when its subject changed.
 * Spec: Confluent Schema Registry API `GET /subjects` (a JSON array of subject names; Apicurio's
 * ccompat API answers the same).
 */
import { Agent, fetch } from 'undici';
import { GatewayError } from '../core/errors.js';

/** What {@link confluentSubjectLister} needs: the registry adapter's resolved options. */
export interface SubjectListerOptions {
  /** Base URL without a trailing slash and without credentials. */
  readonly baseUrl: string;
  readonly timeoutMs: number;
  /** `Basic …` header value, or undefined. */
  readonly authorization: string | undefined;
  /** PEM CA text for TLS, or undefined (Node's default trust store). */
  readonly ca: string | undefined;
}

/**
 * A function listing every subject of the registry at `options.baseUrl` (`GET /subjects`).
 * Errors (from the function): GatewayError CEG_REGISTRY_UNAVAILABLE — retriable when the registry
 *   does not answer, not retriable for an HTTP error or an answer that is not a list of strings.
 */
export function confluentSubjectLister(options: SubjectListerOptions): () => Promise<readonly string[]> {
  const dispatcher = options.ca === undefined ? undefined : new Agent({ connect: { ca: options.ca } });
  const url = `${options.baseUrl}/subjects`;
  return async () => {
    const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
    if (options.authorization !== undefined) headers['authorization'] = options.authorization;
    let status: number;
    let text: string;
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(options.timeoutMs), ...(dispatcher === undefined ? {} : { dispatcher }) });
      status = res.status;
      text = await res.text();
    } catch (err) {
      const reason = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry: listing subjects: ${reason}`, { retriable: true, cause: err, details: { url } });
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (status < 200 || status > 299 || !Array.isArray(json) || !json.every((s) => typeof s === 'string')) {
      throw new GatewayError('CEG_REGISTRY_UNAVAILABLE', `schema registry: listing subjects: HTTP ${status}, not a list of subjects`, { retriable: false, details: { url, status } });
    }
    return json;
  };
}
