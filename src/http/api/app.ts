/**
 * The express 5 application for everything but `POST /events`: catalog and schema documents.
 * Errors are RFC 9457 problem+json like the ingress (`./errors.ts`); JSON bodies are read like the
 * ingress's (`./json-body.ts`: a member name twice in one object is refused).
 */
import express from 'express';
import { GatewayError } from '../../core/errors.js';
import { publicCatalog } from '../../catalog/index.js';
import type { Catalog } from '../../catalog/index.js';
import type { SchemaRegistry } from '../../registry/port.js';
import { createDocsRouter } from './docs.js';
import { buildOpenApi } from './openapi/document.js';
import { MAX_SUBSCRIPTION_BODY_BYTES, subscriptionsRouter } from './subscriptions/routes.js';
import { problemHandler, problemInstance } from './errors.js';
import type { SubscriptionsApi } from './subscriptions/routes.js';
import { MAX_REPLAY_BODY_BYTES, replayRouter } from './subscriptions/replay-routes.js';
import type { ReplaysApi } from './subscriptions/replay-routes.js';
import { subscriptionOperationsRouter } from './subscriptions/operations.js';
import type { SubscriptionOperationsApi } from './subscriptions/operations.js';
import { pullRouter } from './subscriptions/pull-routes.js';
import { DEFAULT_PULL_SLOTS, PullSlots } from './subscriptions/pull-slots.js';
import type { PullApi } from './subscriptions/pull-routes.js';
import type { Logger } from '../../observability/index.js';
import type { DocsOptions } from './docs.js';
import { consoleRouter } from '../console/router.js';
import { attachedAccess, kindAllowed } from '../auth/index.js';
import { SchemaSubjects } from './schema-subjects.js';
import type { ConsoleDeps } from '../console/router.js';

/**
 * The largest body bound of an API route, bytes (the replay route's): what the server checks an
 * `Expect: 100-continue` request to an API path against (server.ts `maxApiBodyBytes`); each route
 * then holds a body to its own bound.
 */
export const MAX_API_BODY_BYTES = Math.max(MAX_SUBSCRIPTION_BODY_BYTES, MAX_REPLAY_BODY_BYTES);

export interface ApiDeps {
  readonly catalog: Catalog;
  /** Long-polls, streams and console tails one partner may hold open at once on this process (PULL_MAX_CONCURRENT_PER_PARTNER); default {@link DEFAULT_PULL_SLOTS}. */
  readonly pullMaxConcurrentPerPartner?: number;
  readonly registry: SchemaRegistry;
  /** Where the AsyncAPI document says the broker, the registry and this API are. */
  readonly docs: DocsOptions;
  /** `Retry-After` on 503 answers, seconds. */
  readonly retryAfterS: number;
  /** `GET /metrics` needs no key (the OpenAPI document says so). */
  readonly metricsPublic?: boolean;
  /** `GET /schemas/ids/{id}` needs no key (`SCHEMAS_AUTH=public` or no authentication; the OpenAPI document says so). */
  readonly schemasPublic?: boolean;
  /** The subscription resources; undefined while they load (503), absent when this gateway serves none (404). */
  readonly subscriptions?: () => SubscriptionsApi | undefined;
  /** Replays of the subscriptions (issue 9); undefined while they load (503). */
  readonly replays?: () => ReplaysApi | undefined;
  /** Dead letters and status of subscriptions by name (issue 10); undefined while loading (503), absent: 404. */
  readonly operations?: () => SubscriptionOperationsApi | undefined;
  /** Pull delivery of the subscriptions (issue 9); undefined while they load (503). Mounted with `subscriptions`. */
  readonly pull?: () => PullApi | undefined;
  /**
   * Where unexpected failures (500 CEG_INTERNAL) are logged with their request and stack, and what
   * happens after an answer started (an SSE stream's failure). Absent: not logged.
   */
  readonly log?: Logger;
  /** Aborted when the gateway shuts down: long-polls answer at once, streams end. */
  readonly closing?: AbortSignal;
  /** The operator console (`/console`); absent: not served. */
  readonly console?: ConsoleDeps;
}

export function createApiApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  // A path is matched exactly: `/subscriptions/` is not `/subscriptions` (RFC 3986 §6.2.4 makes an
  // empty path and `/` the same, nothing more). The ingress (`/events`), /healthz, /readyz and
  // /metrics always matched so (node:http serves them), while express's non-strict routing took
  // `POST /subscriptions/` (and `/subscriptions/x/status/`) for the route without the slash: one
  // rule now for every route, a 404 that says what differs. Before every route, so no router
  // created without `strict` lets one through.
  app.use((req, res, next) => {
    // The console is a page people type into a browser's address bar: `/console/` is sent on to
    // `/console` (308 keeps the method) rather than refused. Only the page: no API path redirects.
    if ((req.method === 'GET' || req.method === 'HEAD') && req.path === '/console/') {
      const query = req.originalUrl.indexOf('?');
      res.redirect(308, `/console${query === -1 ? '' : req.originalUrl.slice(query)}`);
      return;
    }
    if (req.path.length > 1 && req.path.endsWith('/')) {
      next(new GatewayError('CEG_NOT_FOUND', `no route ${req.method} ${problemInstance(req.originalUrl)}: paths end without a slash`, { retriable: false }));
      return;
    }
    next();
  });

  // Internal kinds are never offered in the public documents (issue 11).
  const visible = publicCatalog(deps.catalog);
  app.get('/catalog', (_req, res) => {
    res.json({
      kinds: visible.kinds.map((k) => ({
        eventId: k.eventId,
        name: k.name,
        description: k.description,
        topic: k.topic.name,
        subject: k.subject,
        keyFields: k.keyFields,
        eventClass: k.eventClass,
        maxDataBytes: k.maxDataBytes,
        publish: k.publish,
        owner: k.owner,
        compatibility: k.compatibility,
      })),
    });
  });

  // The `dataschema` of every event this gateway writes points here (DESIGN "The envelope").
  // Behind authentication (SCHEMAS_AUTH=partner) a partner that is not an admin reads only the
  // versions of the subjects of kinds it may publish or subscribe to: the registry is shared, and
  // ids are small integers anyone could count through. Any other id is the same 404 as an id the
  // registry lacks (BOLA: nothing is confirmed).
  const subjects = new SchemaSubjects(deps.registry);
  app.get('/schemas/ids/:id', async (req, res) => {
    const id = /^\d{1,10}$/.test(req.params.id) ? Number(req.params.id) : Number.NaN;
    const notFound = (): GatewayError => new GatewayError('CEG_NOT_FOUND', `no schema with id ${id}`, { retriable: false, details: { field: 'id' } });
    if (!(id <= 0xffffffff)) throw new GatewayError('CEG_NOT_FOUND', `no schema with id ${req.params.id.slice(0, 40)}: ids are integers 0–4294967295`, { retriable: false, details: { field: 'id' } });
    const access = attachedAccess(req);
    if (access !== undefined && !access.admin) {
      const p = access.partner;
      const readable = deps.catalog.kinds.filter((k) => kindAllowed(p.publish, k) || kindAllowed(p.subscribe, k));
      if (!(await subjects.holds(readable, id))) throw notFound();
    }
    const schema = await deps.registry.schemaById(id).catch((err: unknown) => {
      throw err instanceof GatewayError && err.code === 'CEG_SCHEMA_NOT_FOUND' ? notFound() : err;
    });
    res.type('application/json').send(schema);
  });

  app.use(createDocsRouter(visible, deps.docs));
  const openApi = JSON.stringify(buildOpenApi({ publicBaseUrl: deps.docs.publicBaseUrl ?? '/', metricsPublic: deps.metricsPublic ?? false, schemasPublic: deps.schemasPublic ?? false }));
  app.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });
  // One counter for every long-lived read a partner holds open: pulls, streams and console tails.
  const slots = new PullSlots(deps.pullMaxConcurrentPerPartner ?? DEFAULT_PULL_SLOTS);
  if (deps.pull !== undefined) {
    app.use(
      pullRouter(deps.pull, {
        ...(deps.log === undefined ? {} : { log: deps.log }),
        ...(deps.closing === undefined ? {} : { closing: deps.closing }),
        slots,
      }),
    );
  }
  if (deps.subscriptions !== undefined) app.use(subscriptionsRouter(deps.subscriptions, deps.catalog));
  if (deps.replays !== undefined) app.use(replayRouter(deps.replays));
  if (deps.operations !== undefined) app.use(subscriptionOperationsRouter(deps.operations));
  if (deps.console !== undefined) app.use(consoleRouter(deps.console, slots));

  app.use((req, _res, next) => {
    // The path as `instance` shows it (no query, bounded, percent-encoded): never the raw request line.
    next(new GatewayError('CEG_NOT_FOUND', `no route ${req.method} ${problemInstance(req.originalUrl)}`, { retriable: false }));
  });
  // Every error ends here (the console's routes and the documents' too): a problem+json answer;
  // a bad percent-encoding or body is a 4xx, an unexpected failure a 500 that is logged once.
  app.use(problemHandler({ retryAfterS: deps.retryAfterS, ...(deps.log === undefined ? {} : { log: deps.log }) }));
  return app;
}
