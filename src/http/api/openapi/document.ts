/**
 * The OpenAPI 3.1 document of the whole HTTP surface, served at `GET /openapi.json` (public).
 * Built once from the path fragments (paths.ts) and the shared components; every operation needs
 * the bearer key unless it says `security: []`.
 * Spec: OpenAPI 3.1.0; issue 11 ("OpenAPI 3.1 describes every route … with its security scheme").
 */
import { components, problem } from './components.js';
import type { Json, Operation } from './components.js';
import { pathFragments } from './paths.js';

export interface OpenApiOptions {
  /** Where the API is reachable (the document's `servers`). */
  readonly publicBaseUrl: string;
  /** `METRICS_AUTH=public`: `/metrics` needs no key. */
  readonly metricsPublic: boolean;
  /** `SCHEMAS_AUTH=public` (or no authentication): `/schemas/ids/{id}` needs no key. Default false. */
  readonly schemasPublic?: boolean;
  /** The package version (`info.version`). */
  readonly version?: string;
}

/** The 400 of a path with a parameter that cannot be percent-decoded (`api/errors.ts`), where an operation lists no 400 of its own. */
const UNDECODABLE_PATH = problem('The path is not valid percent-encoding (CEG_MALFORMED_REQUEST, `field`: `path`).');

/** Adds the 400 for an undecodable path parameter to each operation of a templated path that lists none. */
function withPathParameter400(ops: Readonly<Record<string, Operation>>): Record<string, Operation> {
  const out: Record<string, Operation> = {};
  for (const [method, op] of Object.entries(ops)) {
    const responses = op.responses as Operation | undefined;
    out[method] = responses === undefined || responses['400'] !== undefined ? op : { ...op, responses: { '400': UNDECODABLE_PATH, ...responses } };
  }
  return out;
}

/**
 * The document as a JSON value. Paths named in two fragments merge their methods; every
 * operation of a path with a parameter (`{name}`) documents a 400 (an undecodable parameter).
 */
export function buildOpenApi(o: OpenApiOptions): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const f of pathFragments(o)) {
    for (const [path, ops] of Object.entries(f)) paths[path] = { ...paths[path], ...(path.includes('{') ? withPathParameter400(ops) : ops) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'ce-gateway',
      version: o.version ?? '0.1.0',
      description: 'CloudEvents gateway and event bus on Kafka: ingress, subscriptions, catalog and schema documents. Errors are RFC 9457 problem+json with stable codes (docs/errors.md).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: o.publicBaseUrl }],
    security: [{ bearerAuth: [] }],
    paths,
    components,
  };
}
