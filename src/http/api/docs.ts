/**
 * HTTP documents of the catalog: the AsyncAPI 3.0 document (JSON and YAML) and the natural-JSON
 * JSON Schema of each kind's data. Built once when the router is created (the catalog is frozen),
 * served as stored text; the YAML form at its first request (YAML output is most of the build: about
 * 0.1 s of CPU for the shipped catalog, paid by every gateway, though few ever serve it).
 * Routes (relative to where the router is mounted):
 * - GET /asyncapi.json, GET /asyncapi.yaml
 * - GET /schemas/json/{eventId or business name}.json → `application/schema+json`
 * Spec: bus spec X2 (the gateway serves AsyncAPI and JSON Schemas); DESIGN "HTTP front door"
 * (OpenAPI and AsyncAPI documents).
 */
import { Router } from 'express';
import { GatewayError } from '../../core/errors.js';
import type { Catalog } from '../../catalog/index.js';
import { buildAsyncApi, jsonSchemaUrl, naturalJsonSchema, toJsonText, toYamlText } from '../../artifacts/export/index.js';
import type { AsyncApiOptions } from '../../artifacts/export/index.js';

/** Options of {@link createDocsRouter}: the document's URLs (the app passes configuration values). */
export type DocsOptions = AsyncApiOptions;

/**
 * An express Router serving the catalog documents.
 * Shapes: `opts.publicBaseUrl` is where this router is reachable (used for `$id` and links);
 *   `opts.kafkaBrokers` / `opts.registryUrl` become the document's server and registry URLs.
 * Errors: GatewayError CEG_NOT_FOUND (retriable: false, `details.field: 'kind'`) for a schema of an
 *   unknown kind, passed to the app's error handler (problem+json).
 */
export function createDocsRouter(catalog: Catalog, opts: DocsOptions = {}): Router {
  const doc = buildAsyncApi(catalog, opts);
  const asyncApiJson = toJsonText(doc);
  let asyncApiYaml: string | undefined;
  const schemas = new Map<string, string>();
  for (const kind of catalog.kinds) {
    const text = toJsonText(naturalJsonSchema(kind, opts.publicBaseUrl === undefined ? {} : { id: jsonSchemaUrl(opts.publicBaseUrl, kind) }));
    schemas.set(kind.eventId, text);
    schemas.set(kind.name, text);
  }

  const router = Router();
  router.get('/asyncapi.json', (_req, res) => {
    res.type('application/json').send(asyncApiJson);
  });
  router.get('/asyncapi.yaml', (_req, res) => {
    asyncApiYaml ??= toYamlText(doc);
    res.type('application/yaml').send(asyncApiYaml);
  });
  router.get('/schemas/json/:file', (req, res) => {
    const file = req.params.file;
    const text = file.endsWith('.json') ? schemas.get(file.slice(0, -'.json'.length)) : undefined;
    if (text === undefined) {
      throw new GatewayError('CEG_NOT_FOUND', `no JSON Schema ${file}: name a kind by eventId or business name, e.g. /schemas/json/<eventId>.json`, {
        retriable: false,
        details: { field: 'kind' },
      });
    }
    res.type('application/schema+json').send(text);
  });
  return router;
}
