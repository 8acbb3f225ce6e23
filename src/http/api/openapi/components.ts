/**
 * Shared parts of the OpenAPI document: the problem+json schema, the bearer security scheme, the
 * rate-limit headers and the error answers every authenticated route may give.
 * Spec: OpenAPI 3.1.0 §4.8.7 (Components), §4.8.27 (Security Scheme: http / bearer); RFC 9457 (problem
 *   details); draft-ietf-httpapi-ratelimit-headers-09; issue 11.
 */

/** A JSON value as the document holds it. */
export type Json = null | boolean | number | string | readonly Json[] | { readonly [k: string]: Json };
/** One operation object (OpenAPI 3.1 §4.8.10). */
export type Operation = { readonly [k: string]: Json };
/** Path → method (lowercase) → operation. */
export type PathsFragment = Readonly<Record<string, Readonly<Record<string, Operation>>>>;

export const PROBLEM = 'application/problem+json';
export const ref = (name: string): { readonly $ref: string } => ({ $ref: `#/components/schemas/${name}` });
const resp = (name: string): { readonly $ref: string } => ({ $ref: `#/components/responses/${name}` });

/** A response whose body is a problem (RFC 9457). */
export function problem(description: string): Operation {
  return { description, content: { [PROBLEM]: { schema: ref('Problem') } } };
}

/** The error answers of an authenticated route, to spread into `responses`. */
export const AUTHENTICATED_ERRORS: Operation = {
  '401': resp('Unauthenticated'),
  '429': resp('RateLimited'),
};

/** Marks an operation as readable without a key. */
export const PUBLIC: Operation = { security: [] };

export const components: Json = {
  securitySchemes: {
    bearerAuth: {
      type: 'http',
      scheme: 'bearer',
      description:
        'A partner API key (PARTNERS_FILE stores its SHA-256). Every route needs it except /healthz, /readyz, /openapi.json, /asyncapi.*, /catalog and /schemas/json/*, /schemas/ids/* when SCHEMAS_AUTH=public, and /metrics when METRICS_AUTH=public. Without PARTNERS_FILE (AUTH=none) no key is checked and the gateway serves only on a loopback address.',
    },
  },
  headers: {
    RateLimitPolicy: { description: 'The partner\'s rate policies (draft-ietf-httpapi-ratelimit-headers): `"requests";q=<per second>;w=1`, and `"events";q=…;w=1` on POST /events.', schema: { type: 'string' } },
    RateLimit: { description: 'What is left of each policy: `"requests";r=<remaining>;t=<seconds until full>`.', schema: { type: 'string' } },
    RetryAfter: { description: 'Seconds to wait before retrying (RFC 9110 §10.2.3).', schema: { type: 'string', pattern: '^[0-9]+$' } },
  },
  responses: {
    Unauthenticated: {
      description: 'No `Authorization: Bearer <key>`, or not a partner\'s key (CEG_UNAUTHENTICATED).',
      headers: { 'WWW-Authenticate': { description: '`Bearer realm="ce-gateway"`, with `error="invalid_token"` when a Bearer credential came. (Two Authorization headers are 400 CEG_MALFORMED_REQUEST with `error="invalid_request"`; a JWT that cannot be checked because the OIDC key set cannot be fetched is 503 CEG_AUTH_UNAVAILABLE.)', schema: { type: 'string' }, required: true } },
      content: { [PROBLEM]: { schema: ref('Problem') } },
    },
    Forbidden: problem('The partner lacks the permission named in `permission` (CEG_FORBIDDEN), or is at `maxSubscriptions` (CEG_QUOTA_EXCEEDED).'),
    NotFound: problem('No such resource, or not the caller\'s (CEG_NOT_FOUND).'),
    RateLimited: {
      description: 'Over the partner\'s requests/s or events/s, too many failed attempts from the address, or (long-polls, streams, console tails) over the partner\'s concurrent pulls on this instance (`limit: concurrentPulls`, `setting: PULL_MAX_CONCURRENT_PER_PARTNER`) (CEG_RATE_LIMITED).',
      headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' }, 'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' }, RateLimit: { $ref: '#/components/headers/RateLimit' } },
      content: { [PROBLEM]: { schema: ref('Problem') } },
    },
    Unavailable: {
      description: 'Starting, or the broker or registry is unreachable (retriable).',
      headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
      content: { [PROBLEM]: { schema: ref('Problem') } },
    },
    MethodNotAllowed: {
      description: 'Method not allowed here (CEG_METHOD_NOT_ALLOWED).',
      headers: { Allow: { schema: { type: 'string' }, required: true } },
      content: { [PROBLEM]: { schema: ref('Problem') } },
    },
  },
  schemas: {
    Problem: {
      type: 'object',
      description: 'RFC 9457 problem details with ce-gateway\'s members (docs/errors.md).',
      required: ['type', 'title', 'status', 'detail', 'code', 'retriable'],
      properties: {
        type: { type: 'string', pattern: '^urn:ce-gateway:error:CEG_[A-Z_]+$' },
        title: { type: 'string' },
        status: { type: 'integer', minimum: 400, maximum: 599 },
        detail: { type: 'string' },
        code: { type: 'string', pattern: '^CEG_[A-Z_]+$' },
        retriable: { type: 'boolean' },
        instance: { type: 'string' },
        permission: { type: 'string', description: 'The permission a 403 lacked: publish, source, internal, subscribe, replay, redrive, admin.' },
        limit: { type: 'string', description: 'The limit a 413 or 429 broke, e.g. `concurrentPulls`.' },
        max: { type: 'number', description: 'That limit\'s value (its unit is the limit\'s: bytes, events, requests).' },
        setting: { type: 'string', description: 'The environment variable that sets the limit broken, when an operator can raise it (e.g. PULL_MAX_CONCURRENT_PER_PARTNER).' },
        violations: {
          type: 'array',
          items: {
            type: 'object',
            required: ['reason'],
            properties: { attribute: { type: 'string' }, field: { type: 'string' }, index: { type: 'integer', minimum: 0 }, reason: { type: 'string' }, code: { type: 'string' } },
          },
        },
      },
    },
    StoredEvent: {
      type: 'object',
      required: ['id', 'topic', 'partition', 'offset'],
      properties: { index: { type: 'integer', minimum: 0 }, id: { type: 'string' }, topic: { type: 'string' }, partition: { type: 'integer', minimum: 0 }, offset: { type: 'string', pattern: '^[0-9]+$', description: 'Kafka offset as decimal text' } },
    },
    EventRef: { type: 'object', required: ['id'], properties: { index: { type: 'integer', minimum: 0 }, id: { type: 'string' } } },
    CloudEvent: {
      type: 'object',
      description: 'CloudEvents 1.0 JSON event format; `type` is the kind\'s eventId (GET /catalog).',
      required: ['specversion', 'id', 'source', 'type', 'time'],
      properties: {
        specversion: { const: '1.0' },
        id: { type: 'string', minLength: 1 },
        source: { type: 'string', minLength: 1 },
        type: { type: 'string', format: 'uuid' },
        time: { type: 'string', format: 'date-time' },
        subject: { type: 'string' },
        datacontenttype: { type: 'string' },
        dataschema: { type: 'string', format: 'uri' },
        data: {},
        data_base64: { type: 'string', contentEncoding: 'base64' },
      },
    },
    DeliveryBatch: {
      type: 'object',
      additionalProperties: false,
      description: 'Push only, opt-in: events POSTed as JSON arrays in the CloudEvents HTTP binding batched content mode (application/cloudevents-batch+json), one signature per body; at most `concurrency` events per batch (docs/subscriptions.md "Batched delivery"). PATCH with null removes it.',
      properties: {
        maxEvents: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        maxBytes: { type: 'integer', minimum: 1024, maximum: 16777216, default: 1048576, description: 'bytes of one request body' },
        maxDelayMs: { type: 'integer', minimum: 0, maximum: 1000, default: 0, description: 'ms a batch waits for more after its first event; 0 = send what is at hand' },
      },
    },
    Subscription: {
      type: 'object',
      description: 'A subscription as GET shows it: never a secret or a sink header\'s value (docs/subscriptions.md).',
      required: ['name', 'owner', 'group', 'deadLetterTopic', 'kinds', 'filters', 'start', 'delivery', 'ordering', 'retry', 'concurrency', 'rateLimit', 'state', 'createdAt', 'updatedAt', 'generation', 'origin'],
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$', description: 'A resource\'s name: [A-Za-z0-9_-], at most 100 characters; a short-form connector\'s (`connector.kind` shell-hook or file-drop) is its subscription name, dots allowed, at most 200.' },
        owner: { type: 'string', description: 'The partner that created it; `anonymous` for a short-form connector (the gateway\'s own).' },
        group: { type: 'string', description: 'Kafka consumer group: ce-gateway.sub.<owner>.<name>; a short-form connector\'s is its name' },
        deadLetterTopic: { type: 'string' },
        kinds: { type: 'array', items: { type: 'string' } },
        filters: { type: 'array', items: { type: 'object' } },
        start: { type: 'string' },
        delivery: {
          type: 'object',
          required: ['mode'],
          properties: {
            mode: { enum: ['push', 'pull', 'shell-hook', 'file-drop'] },
            url: { type: 'string', format: 'uri' },
            contentMode: { enum: ['binary', 'structured'] },
            data: { enum: ['json', 'avro'] },
            handshake: { type: 'boolean' },
            batch: { $ref: '#/components/schemas/DeliveryBatch' },
            secretCount: { type: 'integer', minimum: 0 },
            headerNames: { type: 'array', items: { type: 'string' } },
            secrets: { type: 'array', items: { type: 'string' }, description: 'Only in the 201 of a create without secrets: the generated one, returned once.' },
          },
        },
        ordering: { enum: ['key', 'none'] },
        retry: { type: 'object' },
        concurrency: { type: 'integer', minimum: 1 },
        rateLimit: { type: ['number', 'null'] },
        state: { enum: ['active', 'paused', 'gone', 'failed'], description: '`failed` only for a short-form connector (shell-hook, file-drop) whose member stopped on a failure on the answering instance, as its status says; `stateReason` is the failure.' },
        stateReason: { type: 'string' },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        generation: { type: 'integer', minimum: 1 },
        origin: { enum: ['api', 'file'] },
        connector: {
          type: 'object',
          description: 'The connector file that declares it (origin file only): its name (the file name without extension) and its kind: subscription, or shell-hook / file-drop for the short forms, whose name is their consumer group (docs/connectors.md). Absent for origin api.',
          required: ['kind', 'name'],
          properties: { kind: { enum: ['subscription', 'shell-hook', 'file-drop'] }, name: { type: 'string' } },
        },
        forbiddenKinds: { type: 'array', items: { type: 'string' }, description: 'Kinds (by name) its owner may no longer read (a revoked subscribe permission): not delivered. Absent when none (docs/security.md "Revoking a permission").' },
        forbiddenReason: { type: 'string', description: 'Why, and what to do (with forbiddenKinds).' },
        shadowedBy: {
          type: 'object',
          description: 'A stored subscription that a connector file\'s subscription shadows (the same consumer group, or the same name for the anonymous owner): the file\'s wins and this one is not run until it is deleted or renamed. Absent otherwise (docs/subscriptions.md "Subscriptions in connector files").',
          required: ['name', 'owner', 'group', 'reason'],
          properties: { name: { type: 'string' }, owner: { type: 'string' }, group: { type: 'string' }, reason: { type: 'string' } },
        },
      },
    },
    SubscriptionRequest: {
      type: 'object',
      description: 'POST body (docs/subscriptions.md); PATCH takes a JSON merge patch of it. `owner` is set by the gateway.',
      required: ['name', 'kinds', 'delivery'],
      properties: {
        name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$' },
        kinds: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 100, uniqueItems: true, description: 'Each kind once: a business name and its eventId name the same kind (a repeat is a 400 naming kinds[i]).' },
        filters: { type: 'array', items: { type: 'object' } },
        start: { type: 'string', description: 'latest, earliest or an RFC 3339 time' },
        delivery: {
          type: 'object',
          required: ['mode'],
          properties: {
            mode: { enum: ['push', 'pull'] },
            url: { type: 'string', format: 'uri', description: 'push only' },
            contentMode: { enum: ['binary', 'structured'] },
            data: { enum: ['json', 'avro'] },
            handshake: { type: 'boolean' },
            secrets: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2 },
            headers: { type: 'object', additionalProperties: { type: 'string' } },
            batch: { $ref: '#/components/schemas/DeliveryBatch' },
          },
        },
        ordering: { enum: ['key', 'none'] },
        retry: { type: 'object' },
        concurrency: { type: 'integer', minimum: 1, maximum: 1000, description: 'Deliveries in hand per instance; also bounds a batch.' },
        rateLimit: { type: ['number', 'null'] },
        state: { enum: ['active', 'paused'] },
      },
    },
  },
};
