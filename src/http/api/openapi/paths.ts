/**
 * The routes of the HTTP surface in OpenAPI 3.1 form, one fragment per area. To document a new
 * route: add its path and methods to a fragment here (or a new fragment listed in
 * {@link pathFragments}); test/http/openapi.test.ts fails while an express or node:http route is
 * missing from the document, and the contract test checks its real answers against what is written.
 * Spec: OpenAPI 3.1.0 §4.8.8 (Paths), §4.8.10 (Operation); issue 11.
 */
import { AUTHENTICATED_ERRORS, PROBLEM, PUBLIC, problem, ref } from './components.js';
import type { Operation, PathsFragment } from './components.js';
import { MAX_REPLAY_BODY_BYTES } from '../subscriptions/replay-routes.js';

const json = (schema: Operation, description: string): Operation => ({ description, content: { 'application/json': { schema } } });
const nameParam: Operation = { name: 'name', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$' } };
const ownerParam: Operation = { name: 'owner', in: 'query', required: false, description: 'Admins only: the owner whose subscription is meant (default: the caller). Others naming another owner get 404.', schema: { type: 'string' } };
const notFound: Operation = { $ref: '#/components/responses/NotFound' };
const forbidden: Operation = { $ref: '#/components/responses/Forbidden' };
const unavailable: Operation = { $ref: '#/components/responses/Unavailable' };
const notAllowed: Operation = { $ref: '#/components/responses/MethodNotAllowed' };
const noStore: Operation = { 'Cache-Control': { schema: { const: 'no-store' } } };

/** `POST /events`: the CloudEvents HTTP binding. */
export const ingressPaths: PathsFragment = {
  '/events': {
    post: {
      operationId: 'publishEvents',
      summary: 'Publish CloudEvents (binary, structured or batch mode)',
      description:
        'Answers 202 once the broker acknowledged every event. Permissions are decided from `type` and `source` before the data is validated: an unpermitted kind or source, or an internal kind, is 403 and nothing is written. A query string is ignored (the CloudEvents HTTP binding defines none, and a sender\'s harmless parameter must not cost its events; the management routes refuse unknown ones). See README "HTTP API".',
      requestBody: {
        required: true,
        content: {
          'application/cloudevents+json': { schema: ref('CloudEvent') },
          'application/cloudevents-batch+json': { schema: { type: 'array', items: ref('CloudEvent') } },
          '*/*': { schema: { description: 'Binary mode: attributes in ce- headers, the data as the body.' } },
        },
      },
      responses: {
        '202': {
          description: 'Every event is stored.',
          headers: { 'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' }, RateLimit: { $ref: '#/components/headers/RateLimit' } },
          content: { 'application/json': { schema: { type: 'object', required: ['events'], properties: { events: { type: 'array', items: ref('StoredEvent') } } } } },
        },
        '400': problem('Invalid event(s): every violation named (attribute, field, index).'),
        '403': forbidden,
        '405': notAllowed,
        '408': problem('The request did not arrive in time.'),
        '413': problem('Body, batch, event or record over its bound.'),
        '414': problem('Request target (path and query) over the bound.'),
        '415': problem('Not a CloudEvents media type or content coding.'),
        '431': problem('Headers over the bound.'),
        '503': {
          description: 'Not every event confirmed in time, or the gateway is starting/busy: each event listed once as stored, notStored or unconfirmed.',
          headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
          content: {
            [PROBLEM]: {
              schema: {
                allOf: [ref('Problem'), { type: 'object', properties: { stored: { type: 'array', items: ref('StoredEvent') }, notStored: { type: 'array', items: ref('EventRef') }, unconfirmed: { type: 'array', items: ref('EventRef') } } }],
              },
            },
          },
        },
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
};

/** Health, readiness and metrics (served by node:http). */
export function operationalPaths(metricsPublic: boolean): PathsFragment {
  return {
    '/healthz': { get: { operationId: 'health', summary: 'Liveness', ...PUBLIC, responses: { '200': json({ type: 'object', required: ['status'], properties: { status: { const: 'ok' } } }, 'The process runs.') } } },
    '/readyz': {
      get: {
        operationId: 'ready',
        summary: 'Readiness: broker and registry reachable, topics and schemas ready',
        ...PUBLIC,
        responses: Object.fromEntries(
          ['200', '503'].map((s) => [s, json({ type: 'object', required: ['status'], properties: { status: { enum: ['ready', 'not ready'] }, checks: { type: 'object', additionalProperties: { type: 'boolean' } }, durable: { type: 'boolean' }, warning: { type: 'string' } } }, s === '200' ? 'Ready.' : 'Not ready.')]),
        ),
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        ...(metricsPublic ? PUBLIC : { description: 'Needs an admin partner unless METRICS_AUTH=public.' }),
        responses: { '200': { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } }, ...(metricsPublic ? {} : { '403': forbidden, ...AUTHENTICATED_ERRORS }) },
      },
    },
  };
}

/** The public documents: catalog, AsyncAPI, JSON Schemas, schemas by id, this document. */
export const documentPaths: PathsFragment = {
  '/catalog': {
    get: {
      operationId: 'catalog',
      summary: 'The event kinds (internal kinds left out)',
      ...PUBLIC,
      responses: {
        '200': json(
          {
            type: 'object',
            required: ['kinds'],
            properties: {
              kinds: {
                type: 'array',
                items: { type: 'object', required: ['eventId', 'name', 'topic', 'subject'], properties: { eventId: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, topic: { type: 'string' }, subject: { type: 'string' }, keyFields: { type: 'array', items: { type: 'string' } }, eventClass: { enum: ['notification', 'document'] }, maxDataBytes: { type: 'integer' }, publish: { type: 'boolean' }, owner: { type: 'string' }, compatibility: { type: 'string' } } },
              },
            },
          },
          'Every kind partners may see.',
        ),
      },
    },
  },
  '/asyncapi.json': { get: { operationId: 'asyncApiJson', summary: 'The AsyncAPI 3.0 document', ...PUBLIC, responses: { '200': json({ type: 'object', required: ['asyncapi'] }, 'AsyncAPI 3.0 as JSON.') } } },
  '/asyncapi.yaml': { get: { operationId: 'asyncApiYaml', summary: 'The AsyncAPI 3.0 document as YAML', ...PUBLIC, responses: { '200': { description: 'AsyncAPI 3.0 as YAML.', content: { 'application/yaml': { schema: { type: 'string' } } } } } } },
  '/openapi.json': { get: { operationId: 'openApi', summary: 'This document', ...PUBLIC, responses: { '200': json({ type: 'object', required: ['openapi', 'paths'] }, 'OpenAPI 3.1.') } } },
  '/schemas/json/{file}': {
    get: {
      operationId: 'jsonSchema',
      summary: 'JSON Schema (2020-12) of a kind\'s natural-JSON data',
      ...PUBLIC,
      parameters: [{ name: 'file', in: 'path', required: true, description: '<eventId or name>.json', schema: { type: 'string' } }],
      responses: { '200': { description: 'The schema.', content: { 'application/schema+json': { schema: { type: 'object' } } } }, '404': notFound },
    },
  },
};

const subscriptionAnswer = (status: string, description: string): Operation => ({
  [status]: { description, headers: noStore, content: { 'application/json': { schema: ref('Subscription') } } },
});

/** `/subscriptions`: the resources (issue 8) with ownership (issue 11). */
export const subscriptionPaths: PathsFragment = {
  '/subscriptions': {
    post: {
      operationId: 'createSubscription',
      summary: 'Create a push subscription (owned by the caller, or by `?owner=` for an admin)',
      parameters: [ownerParam],
      requestBody: { required: true, content: { 'application/json': { schema: ref('SubscriptionRequest') } } },
      responses: {
        ...subscriptionAnswer('201', 'Created; `Location` names it. A generated secret is in `delivery.secrets` of this answer only.'),
        '400': problem('Invalid subscription: every field named.'),
        '403': forbidden,
        '404': notFound,
        '409': problem('A subscription of that name exists.'),
        '413': problem('Body over 64 KiB.'),
        '415': problem('Not JSON.'),
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
    get: {
      operationId: 'listSubscriptions',
      summary: 'The caller\'s subscriptions (an admin: every owner\'s, or `?owner=`)',
      parameters: [ownerParam],
      responses: {
        '200': { description: 'The list.', headers: noStore, content: { 'application/json': { schema: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: ref('Subscription') } } } } } },
        '404': notFound,
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
  '/subscriptions/{name}': {
    get: { operationId: 'getSubscription', summary: 'One subscription', parameters: [nameParam, ownerParam], responses: { ...subscriptionAnswer('200', 'The subscription.'), '404': notFound, '503': unavailable, ...AUTHENTICATED_ERRORS } },
    patch: {
      operationId: 'updateSubscription',
      summary: 'JSON merge patch (RFC 7396)',
      parameters: [nameParam, ownerParam],
      requestBody: { required: true, content: { 'application/merge-patch+json': { schema: { type: 'object' } }, 'application/json': { schema: { type: 'object' } } } },
      responses: { ...subscriptionAnswer('200', 'The updated subscription.'), '400': problem('Invalid patch.'), '403': forbidden, '404': notFound, '409': problem('Declared in a connector file.'), '415': problem('Not JSON.'), '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
    delete: { operationId: 'deleteSubscription', summary: 'Delete', parameters: [nameParam, ownerParam], responses: { '204': { description: 'Deleted.' }, '404': notFound, '409': problem('Declared in a connector file.'), '503': unavailable, ...AUTHENTICATED_ERRORS } },
  },
};

const asset = (operationId: string, summary: string, type: string): Readonly<Record<string, Operation>> => ({
  get: { operationId, summary, ...PUBLIC, responses: { '200': { description: 'The asset (Content-Security-Policy: this origin only).', content: { [type]: { schema: { type: 'string' } } } } } },
});

/** The operator console (issue 16): a public page and assets, data routes behind the key. */
export const consolePaths: PathsFragment = {
  '/console': asset('consolePage', 'The operator console page', 'text/html'),
  '/console/app.js': asset('consoleScript', 'The console\'s script', 'text/javascript'),
  '/console/app.css': asset('consoleStyle', 'The console\'s style sheet', 'text/css'),
  '/console/favicon.svg': asset('consoleIcon', 'The console\'s icon', 'image/svg+xml'),
  '/console/api/trace/{correlationid}': {
    get: {
      operationId: 'consoleTrace',
      summary: 'The chain of a correlationid as a tree (admins only)',
      parameters: [
        { name: 'correlationid', in: 'path', required: true, schema: { type: 'string', maxLength: 256 } },
        { name: 'since', in: 'query', required: false, description: 'ms since the epoch', schema: { type: 'integer', minimum: 0 } },
      ],
      responses: {
        '200': json({ type: 'object', required: ['correlationid', 'complete', 'roots'], properties: { correlationid: { type: 'string' }, complete: { type: 'boolean' }, roots: { type: 'array' }, invalid: {} } }, 'The chain.'),
        '400': problem('Malformed correlationid or since; an unknown or repeated query parameter (CEG_INVALID_PARAMETER naming it).'),
        '403': forbidden,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
  '/console/api/tail/{name}': {
    get: {
      operationId: 'consoleTail',
      summary: 'Live tail of a subscription\'s kinds (server-sent events), read-only',
      parameters: [nameParam, ownerParam],
      responses: {
        '200': { description: 'One `data:` JSON message per record from now on; a heartbeat comment every 15 s. A read that fails after the 200 ends the stream with an `event: error` message whose `data` is the problem object (code, detail, retriable), as a pull stream does.', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        '400': problem('An unknown or repeated query parameter (CEG_INVALID_PARAMETER naming it).'),
        '404': notFound,
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
};

/** Pull delivery (issue 9) of the caller's subscriptions with `delivery.mode: "pull"`. */
export const pullPaths: PathsFragment = {
  '/subscriptions/{name}/events': {
    get: {
      operationId: 'pullEvents',
      summary: 'Long-poll: up to `max` events after the cursor (docs/subscriptions.md)',
      parameters: [
        nameParam,
        ownerParam,
        { name: 'max', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        {
          name: 'maxBytes',
          in: 'query',
          required: false,
          description: 'bytes: the most UTF-8 bytes of the answer body (default and ceiling 4 MiB); the answer stops before the event that would pass it, and a single larger event goes alone',
          schema: { type: 'integer', minimum: 1024, maximum: 4_194_304, default: 4_194_304 },
        },
        { name: 'wait', in: 'query', required: false, description: 'seconds, 0–30', schema: { type: 'string' } },
        { name: 'cursor', in: 'query', required: false, schema: { type: 'string' } },
        { name: 'partitions', in: 'query', required: false, schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'The events (`[]` when `wait` ran out); the cursor after them in `ce-gateway-cursor`.',
          headers: { 'ce-gateway-cursor': { schema: { type: 'string' }, required: true }, ...noStore },
          content: { 'application/cloudevents-batch+json': { schema: { type: 'array', items: { type: 'object', required: ['specversion', 'id', 'source', 'type'] } } } },
        },
        '400': problem('A bad parameter or cursor (CEG_INVALID_PARAMETER, CEG_INVALID_CURSOR), naming the field.'),
        '404': notFound,
        '405': notAllowed,
        '409': problem('Not a pull subscription, or paused (also when paused during the wait: `state`).'),
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
  '/subscriptions/{name}/cursors': {
    post: {
      operationId: 'commitCursor',
      summary: 'Commit a cursor (any instance)',
      parameters: [nameParam, ownerParam],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['cursor'], properties: { cursor: { type: 'string' } } } } } },
      responses: { '204': { description: 'Committed.' }, '400': problem('A bad cursor or body.'), '404': notFound, '405': notAllowed, '409': problem('Not a pull subscription.'), '415': problem('Not JSON.'), '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
  },
  '/subscriptions/{name}/stream': {
    get: {
      operationId: 'pullStream',
      summary: 'Server-sent events from the cursor (or Last-Event-ID); never commits',
      parameters: [nameParam, ownerParam, { name: 'cursor', in: 'query', required: false, schema: { type: 'string' } }, { name: 'partitions', in: 'query', required: false, schema: { type: 'string' } }, { name: 'heartbeat', in: 'query', required: false, schema: { type: 'string' } }],
      responses: {
        '200': { description: '`id:` = the cursor after the event, `data:` = the event (JSON format); heartbeats as comments; the stream ends cleanly after 10 min (reconnect with `Last-Event-ID`).', content: { 'text/event-stream': { schema: { type: 'string' } } } },
        '400': problem('A bad parameter or cursor.'),
        '404': notFound,
        '405': notAllowed,
        '409': problem('Not a pull subscription.'),
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
};

const anyObject = (required: readonly string[]): Operation => ({ type: 'object', required: [...required] });
const jsonAnswer = (description: string, schema: Operation): Operation => ({ description, headers: { ...noStore }, content: { 'application/json': { schema } } });
const selection: Operation = {
  required: false,
  // `events`: exactly those events (CloudEvents names one by source + id); `ids`: those ids from any source;
  // `deadLetters`: exactly those dead letters by partition and offset on the subscription's dead-letter
  // topic (the listing's `deadLetter`; `topic`, if sent, must be that topic; `time` is ignored), also
  // one that is not a readable event (break report E5). One kind per body.
  content: {
    'application/json': {
      schema: {
        oneOf: [
          { type: 'object', required: ['events'], additionalProperties: false, properties: { events: { type: 'array', minItems: 1, maxItems: 1000, items: { type: 'object', required: ['source', 'id'], additionalProperties: false, properties: { source: { type: 'string', minLength: 1, maxLength: 4096 }, id: { type: 'string', minLength: 1, maxLength: 1000 } } } } } },
          { type: 'object', required: ['ids'], additionalProperties: false, properties: { ids: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 1000 }, minItems: 1, maxItems: 1000 } } },
          {
            type: 'object',
            required: ['deadLetters'],
            additionalProperties: false,
            properties: {
              deadLetters: {
                type: 'array',
                minItems: 1,
                maxItems: 1000,
                items: {
                  type: 'object',
                  required: ['partition', 'offset'],
                  additionalProperties: false,
                  properties: {
                    partition: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
                    offset: { type: 'string', pattern: '^(0|[1-9][0-9]{0,18})$', description: 'Decimal text, at most 2^63−1 (9223372036854775807).' },
                    topic: { type: 'string', minLength: 1, description: "The subscription's dead-letter topic (implied; any other is refused with 400)." },
                    time: { type: 'string', description: 'Ignored (the listing\'s deadLetter may be sent back as it is).' },
                  },
                },
              },
            },
          },
          { type: 'object', required: ['all'], additionalProperties: false, properties: { all: { const: true } } },
        ],
      },
    },
  },
};

/** Dead letters and status (issue 10) and replay (issue 9) of the caller's subscriptions. */
export const operationPaths: PathsFragment = {
  '/subscriptions/{name}/deadletters': {
    get: {
      operationId: 'listDeadLetters',
      summary: 'The subscription’s dead letters, paged (docs/subscriptions.md#dead-letters)',
      parameters: [nameParam, ownerParam, { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000 } }, { name: 'after', in: 'query', required: false, schema: { type: 'string' } }],
      responses: {
        '200': jsonAnswer('A page: `items` (id, source, reason, attempts, last status and excerpt, coordinates, failure times, the event) and `next` (the `after` of the next page, or null).', { type: 'object', required: ['items', 'next'], properties: { items: { type: 'array', items: { type: 'object' } }, next: { type: ['string', 'null'] } } }),
        '400': problem('A bad `limit` or `after` (CEG_INVALID_PARAMETER).'),
        '404': notFound,
        '405': notAllowed,
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
    delete: {
      operationId: 'purgeDeadLetters',
      summary: 'Purge dead letters an operator has dealt with (all, `events` by source and id, `ids` from any source, or `deadLetters` by partition and offset); needs `redrive` or admin',
      parameters: [nameParam, ownerParam],
      requestBody: selection,
      responses: { '200': jsonAnswer('What was purged: the count, the purged dead letters with their event id and source (null when not a readable event; not listed for all), and what was not found, as asked.', anyObject(['purged', 'items', 'notFound'])), '400': problem('A bad selection, or a Content-Type without content (no body and no Content-Type selects all).'), '403': forbidden, '404': notFound, '405': notAllowed, '415': problem('Not JSON.'), '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
  },
  '/subscriptions/{name}/deadletters/redrive': {
    post: {
      operationId: 'redriveDeadLetters',
      summary: 'Send dead letters back to this subscription only, once each; needs `redrive` or admin',
      parameters: [nameParam, ownerParam],
      requestBody: { ...selection, required: true },
      responses: { '200': jsonAnswer('What was redriven, skipped and not found.', anyObject(['redriven', 'items', 'skipped', 'notFound'])), '400': problem('A bad selection.'), '403': forbidden, '404': notFound, '405': notAllowed, '409': problem('A pull subscription (nothing would deliver its dead letters).'), '415': problem('Not JSON.'), '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
  },
  '/subscriptions/{name}/status': {
    get: {
      operationId: 'subscriptionStatus',
      summary: 'State, lag per partition, delivered / retried / dead-lettered counts, last error and delivery',
      parameters: [nameParam, ownerParam],
      responses: { '200': jsonAnswer('The status (`lag.total`, `lag.partitions`; counts of the answering instance: `scope: "instance"`).', { type: 'object', required: ['name', 'state', 'lag'], properties: { lag: anyObject(['total', 'partitions']) } }), '404': notFound, '405': notAllowed, '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
  },
  '/subscriptions/{name}/replay': {
    post: {
      operationId: 'replaySubscription',
      summary: 'Replay by offset reset (or a dry run); needs `replay` or admin (docs/subscriptions.md#replay)',
      parameters: [nameParam, ownerParam],
      requestBody: {
        required: true,
        content: { 'application/json': { schema: { type: 'object', required: ['to'], properties: { to: { oneOf: [{ type: 'string' }, { type: 'object', additionalProperties: { type: ['integer', 'string'] } }] }, dryRun: { type: 'boolean' } } } } },
      },
      responses: {
        '200': jsonAnswer('Per partition `from`, `to` and `events` (redelivered), and their total; `outcome: "done"`.', anyObject(['at', 'by', 'to', 'dryRun', 'outcome', 'partitions', 'events'])),
        '400': problem('An invalid request (CEG_INVALID_REPLAY), naming the field.'),
        '403': forbidden,
        '404': notFound,
        '405': notAllowed,
        '409': problem('A replay of it is under way; declared in a connector file, or shadowed by one (`shadowedBy`).'),
        '413': problem(`Body over ${MAX_REPLAY_BODY_BYTES} bytes (room for 10,000 partitions of explicit offsets; more partitions are a 400 naming \`to\`), naming \`body\`, with \`maxBytes\`.`),
        '415': problem('Not JSON.'),
        '503': unavailable,
        ...AUTHENTICATED_ERRORS,
      },
    },
  },
  '/subscriptions/{name}/replays': {
    get: {
      operationId: 'listReplays',
      summary: 'The audit log of the subscription’s replays',
      parameters: [nameParam, ownerParam],
      responses: { '200': jsonAnswer('`[{ at, by, to, dryRun, outcome, partitions, events, skipped, notMoved?, error? }]`: every dry run and every replay that paused delivery, with its `outcome` (`done`, `partial`, `failed`); refused requests are not listed (docs/subscriptions.md#what-the-audit-log-holds).', { type: 'array', items: anyObject(['at', 'by', 'to', 'dryRun', 'outcome', 'partitions', 'events']) }), '404': notFound, '405': notAllowed, '503': unavailable, ...AUTHENTICATED_ERRORS },
    },
  },
};

/** Every fragment, in document order. Add new areas here. */
/** `GET /schemas/ids/{id}`: public with `SCHEMAS_AUTH=public` (or no authentication), else for partners that may read a kind using the schema. */
export function schemaByIdPath(schemasPublic: boolean): PathsFragment {
  return {
    '/schemas/ids/{id}': {
      get: {
        operationId: 'schemaById',
        summary: 'The Avro schema behind a `dataschema`',
        ...(schemasPublic ? PUBLIC : { description: 'Needs a partner that may publish or subscribe to a kind whose subject holds the schema, or an admin (any other id: 404), unless SCHEMAS_AUTH=public.' }),
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9]{1,10}$' } }],
        responses: { '200': json({ type: ['object', 'array', 'string'] }, 'The Avro schema as the registry holds it.'), '404': notFound, '503': unavailable, ...(schemasPublic ? {} : AUTHENTICATED_ERRORS) },
      },
    },
  };
}

export function pathFragments(o: { readonly metricsPublic: boolean; readonly schemasPublic?: boolean }): readonly PathsFragment[] {
  return [ingressPaths, operationalPaths(o.metricsPublic), documentPaths, schemaByIdPath(o.schemasPublic ?? false), subscriptionPaths, pullPaths, operationPaths, consolePaths];
}
