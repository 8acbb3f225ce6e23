/**
 * The AsyncAPI 3.0 document of the catalog: one channel per Kafka topic (address = topic name),
 * one message per event kind keyed by its eventId, a `receive` operation per channel.
 *
 * Each message describes the CloudEvents binary-mode record: `ce_*` headers (with `ce_type` fixed
 * to the eventId — the header a subscriber selects records by), `content-type: application/avro`,
 * the record key (`partitionkey`), the value in the Confluent wire format whose schema is found in
 * the registry under the message's subject, and the Avro schema itself. The data's natural-JSON
 * JSON Schema (for HTTP partners) is in `components.schemas` and linked from the message; its local
 * `$ref`s are written as pointers into this document, where AsyncAPI tools resolve them.
 *
 * The Avro payload is a Reference into `components.x-avro-schemas`: the Avro meta-schema bundled in
 * the AsyncAPI 3.0 JSON Schema refuses attributes such as `logicalType` on primitive types in some
 * releases, and a Reference keeps the document valid against every release while the Avro text
 * stays in the document, unchanged.
 *
 * Spec: AsyncAPI 3.0.0 (Channel, Operation, Message, Multi Format Schema, Reference objects);
 * AsyncAPI Kafka bindings 0.4.0 (server `schemaRegistryUrl`, channel topic configuration, message
 * `key`, `schemaIdLocation`, `schemaLookupStrategy`); CloudEvents Kafka protocol binding 1.0.2 §3.1
 * (key), §3.2 (binary content mode); bus spec X2, M3; DESIGN "Kafka mapping".
 */
import { publicUrl } from '../../core/public-url.js';
import type { JsonValue } from '../../envelope/types.js';
import type { Catalog, EventKind } from '../../catalog/index.js';
import { naturalJsonSchema } from './json-schema.js';
import type { JsonSchema } from './json-schema.js';

/** `schemaFormat` of the Avro payloads. */
export const AVRO_SCHEMA_FORMAT = 'application/vnd.apache.avro+json;version=1.9.0';
/** `schemaFormat` of the natural-JSON schemas (JSON Schema 2020-12; a custom AsyncAPI format string). */
export const JSON_SCHEMA_FORMAT = 'application/schema+json;version=2020-12';
/** Kafka binding version used throughout. */
export const KAFKA_BINDING_VERSION = '0.4.0';
/** Content type of every record value the gateway writes. */
export const RECORD_CONTENT_TYPE = 'application/avro';

/** Options of {@link buildAsyncApi}; each absent value is left out of the document. */
export interface AsyncApiOptions {
  /** `info.title`; default `ce-gateway event catalog`. */
  readonly title?: string;
  /** `info.version`; default `1.0.0`. */
  readonly version?: string;
  /** Kafka bootstrap servers, `host:port`; one server entry each. */
  readonly kafkaBrokers?: readonly string[];
  /** Confluent-compatible schema registry base URL (server binding `schemaRegistryUrl`, message `x-schema-registry.url`). */
  readonly registryUrl?: string;
  /** Public base URL of this gateway's HTTP API (no trailing slash), for links to the JSON Schemas. */
  readonly publicBaseUrl?: string;
  /** Public base of `dataschema` (the schema id is appended), to describe `ce_dataschema`. */
  readonly dataschemaBase?: string;
}

/** The AsyncAPI document as plain JSON. */
export type AsyncApiDocument = { readonly [key: string]: JsonValue };

/** RFC 6901 reference token. */
function token(s: string): string {
  return s.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** URL of the natural-JSON schema of `kind` under `publicBaseUrl` (published: without credentials, {@link publicUrl}). */
export function jsonSchemaUrl(publicBaseUrl: string, kind: EventKind): string {
  return `${publicUrl(publicBaseUrl).replace(/\/+$/, '')}/schemas/json/${kind.eventId}.json`;
}

/** `opts` with each URL as it may be published: no userinfo, no secret query parameter ({@link publicUrl}). */
function publishable(opts: AsyncApiOptions): AsyncApiOptions {
  return {
    ...opts,
    ...(opts.registryUrl === undefined ? {} : { registryUrl: publicUrl(opts.registryUrl) }),
    ...(opts.publicBaseUrl === undefined ? {} : { publicBaseUrl: publicUrl(opts.publicBaseUrl) }),
    ...(opts.dataschemaBase === undefined ? {} : { dataschemaBase: publicUrl(opts.dataschemaBase) }),
  };
}

/** Component key of a kind's natural-JSON schema. */
export function jsonSchemaComponent(kind: EventKind): string {
  return `natural-json.${kind.eventId}`;
}

function lookupStrategy(kind: EventKind): string {
  return kind.subjectStrategy === 'topic-record-name' ? 'TopicRecordNameStrategy' : 'TopicNameStrategy';
}

function str(description: string, extra: Record<string, JsonValue> = {}): Record<string, JsonValue> {
  return { type: 'string', description, ...extra };
}

function headers(kind: EventKind, opts: AsyncApiOptions): JsonValue {
  const keyDoc = `Partition key: the values of ${kind.keyFields.join(', ')} with every character outside [A-Za-z0-9] replaced by "-", joined by "_" (e.g. EUR-USD_H4). Also the record key.`;
  return {
    type: 'object',
    description: 'CloudEvents Kafka protocol binding 1.0.2, binary content mode: one ce_<attribute> header per attribute, its canonical string in UTF-8; content-type carries datacontenttype. Other ce_ headers may appear (extensions).',
    required: [
      'ce_specversion',
      'ce_id',
      'ce_source',
      'ce_type',
      'ce_time',
      'ce_dataschema',
      'ce_correlationid',
      'ce_schemaversion',
      'ce_eventname',
      'ce_partitionkey',
      'ce_eventclass',
      'content-type',
    ],
    properties: {
      ce_specversion: str('CloudEvents spec version.', { const: '1.0' }),
      ce_id: str('Event id, unique per source; consumers drop duplicates by ce_source + ce_id.', { minLength: 1 }),
      ce_source: str('Emitting service and instance, e.g. urn:caishen:pdsp:host-1 (URI-reference).', { minLength: 1, format: 'uri-reference' }),
      ce_type: str(`The eventId of ${kind.name}: select records of this kind by this header.`, { const: kind.eventId }),
      ce_time: str('When the event happened: RFC 3339 with an offset, kept as the emitter wrote it.', { format: 'date-time' }),
      ce_subject: str('Subject of the event within the source.'),
      ce_dataschema: str(
        opts.dataschemaBase === undefined
          ? 'URL of the exact writer schema (ends with the registry schema id).'
          : `URL of the exact writer schema: ${opts.dataschemaBase}<registry schema id>.`,
        { format: 'uri' },
      ),
      ce_correlationid: str('Correlation id of the chain of events (bus spec M2).', { minLength: 1 }),
      ce_causationid: str('ce_id of the event being handled when this one was emitted.'),
      ce_runid: str('Identity of the emitting process run.'),
      ce_schemaversion: str(`Registry version of the writer schema under subject ${kind.subject} (a CloudEvents Integer as text).`, { pattern: '^[1-9][0-9]*$' }),
      ce_eventname: str('Business name of the kind (a label; never route on it).', { const: kind.name }),
      ce_partitionkey: str(keyDoc, { pattern: '^[A-Za-z0-9._-]+$' }),
      ce_eventclass: str('notification (identity only) or document (carries data under an explicit bound).', { const: kind.eventClass }),
      ce_traceparent: str('W3C trace context traceparent.', { pattern: '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$' }),
      ce_tracestate: str('W3C trace context tracestate.'),
      'content-type': str('datacontenttype of the value.', { const: RECORD_CONTENT_TYPE }),
    },
  };
}

function message(kind: EventKind, opts: AsyncApiOptions): JsonValue {
  const registry: Record<string, JsonValue> = {
    ...(opts.registryUrl === undefined ? {} : { url: opts.registryUrl }),
    subject: kind.subject,
    subjectNameStrategy: lookupStrategy(kind),
    recordName: kind.recordName,
    compatibility: kind.compatibility,
  };
  return {
    name: kind.name,
    title: kind.name,
    summary: kind.description,
    description: [
      `CloudEvent \`type\` **${kind.eventId}** (${kind.name}) on topic \`${kind.topic.name}\`.`,
      `Record value: Confluent wire format (magic byte 0, 4-byte big-endian schema id, Avro binary); the writer schema is registered under subject \`${kind.subject}\` (${lookupStrategy(kind)}, compatibility ${kind.compatibility}).`,
      `Record key: \`partitionkey\` from ${kind.keyFields.map((f) => `\`${f}\``).join(', ')}. Other kinds may share the topic: select records by the \`ce_type\` header.`,
    ].join('\n\n'),
    contentType: RECORD_CONTENT_TYPE,
    headers: headers(kind, opts),
    payload: {
      schemaFormat: AVRO_SCHEMA_FORMAT,
      schema: { $ref: `#/components/x-avro-schemas/${token(kind.eventId)}` },
    },
    correlationId: {
      description: 'Correlation id of the chain of events (CloudEvents extension correlationid).',
      location: '$message.header#/ce_correlationid',
    },
    tags: [{ name: `owner:${kind.owner}` }, { name: `class:${kind.eventClass}` }],
    ...(opts.publicBaseUrl === undefined
      ? {}
      : { externalDocs: { description: 'JSON Schema of the data in natural JSON (HTTP ingress and webhooks).', url: jsonSchemaUrl(opts.publicBaseUrl, kind) } }),
    bindings: {
      kafka: {
        key: { type: 'string', pattern: '^[A-Za-z0-9._-]+$', description: `partitionkey: ${kind.keyFields.join(', ')}` },
        schemaIdLocation: 'payload',
        schemaIdPayloadEncoding: 'confluent',
        schemaLookupStrategy: lookupStrategy(kind),
        bindingVersion: KAFKA_BINDING_VERSION,
        'x-schema-registry-subject': kind.subject,
      },
    },
    'x-event-id': kind.eventId,
    'x-topic': kind.topic.name,
    'x-schema-registry': registry,
    'x-catalog': {
      keyFields: [...kind.keyFields],
      eventClass: kind.eventClass,
      maxDataBytes: kind.maxDataBytes,
      publish: kind.publish,
      owner: kind.owner,
    },
    'x-natural-json-schema': { $ref: `#/components/schemas/${token(jsonSchemaComponent(kind))}` },
  };
}

function channel(catalog: Catalog, topic: EventKind['topic']): JsonValue {
  const kinds = catalog.kinds.filter((k) => k.topic.name === topic.name);
  const configuration: Record<string, JsonValue> = {
    'cleanup.policy': topic.cleanupPolicy.split(','),
    'retention.ms': topic.retentionMs,
    ...(topic.maxMessageBytes === undefined ? {} : { 'max.message.bytes': topic.maxMessageBytes }),
  };
  return {
    address: topic.name,
    title: topic.name,
    description: `Kafka topic of ${kinds.map((k) => `${k.name} (${k.eventId})`).join(', ')}.`,
    messages: Object.fromEntries(kinds.map((k) => [k.eventId, { $ref: `#/components/messages/${token(k.eventId)}` }])),
    bindings: {
      kafka: {
        topic: topic.name,
        partitions: topic.partitions,
        topicConfiguration: configuration,
        bindingVersion: KAFKA_BINDING_VERSION,
      },
    },
  };
}

/**
 * Builds the AsyncAPI 3.0 document of `catalog`. Pure and deterministic: channels in topic
 * first-use order, messages and schemas in catalog order.
 * Every URL of `opts` is written without credentials (userinfo, secret query parameters).
 * Errors: GatewayError CEG_SCHEMA_INVALID (retriable: false) when a kind's schema is not valid
 *   Avro (never for a loaded catalog).
 * Spec: AsyncAPI 3.0.0; bus spec X2 (AsyncAPI with one message per kind keyed by eventId).
 */
export function buildAsyncApi(catalog: Catalog, given: AsyncApiOptions = {}): AsyncApiDocument {
  // The document is public (GET /asyncapi.json needs no credentials): a registry URL's
  // `user:password@` is for the connection, never for its readers.
  const opts = publishable(given);
  const servers: Record<string, JsonValue> = {};
  const brokers = opts.kafkaBrokers ?? [];
  brokers.forEach((host, i) => {
    servers[brokers.length === 1 ? 'kafka' : `kafka-${i + 1}`] = {
      host,
      protocol: 'kafka',
      description: `Kafka bootstrap server${brokers.length > 1 ? ` (bootstrap list: ${brokers.join(',')})` : ''}.`,
      bindings: {
        kafka: {
          ...(opts.registryUrl === undefined ? {} : { schemaRegistryUrl: opts.registryUrl }),
          schemaRegistryVendor: 'confluent',
          bindingVersion: KAFKA_BINDING_VERSION,
        },
      },
    };
  });

  const channels: Record<string, JsonValue> = {};
  const operations: Record<string, JsonValue> = {};
  for (const topic of catalog.topics) {
    channels[topic.name] = channel(catalog, topic);
    operations[`receive.${topic.name}`] = {
      action: 'receive',
      title: `Receive from ${topic.name}`,
      channel: { $ref: `#/channels/${token(topic.name)}` },
      messages: catalog.kinds
        .filter((k) => k.topic.name === topic.name)
        .map((k) => ({ $ref: `#/channels/${token(topic.name)}/messages/${token(k.eventId)}` })),
    };
  }

  const messages: Record<string, JsonValue> = {};
  const schemas: Record<string, JsonValue> = {};
  const avro: Record<string, JsonValue> = {};
  for (const kind of catalog.kinds) {
    messages[kind.eventId] = message(kind, opts);
    const schema: JsonSchema = naturalJsonSchema(kind, {
      ...(opts.publicBaseUrl === undefined ? {} : { id: jsonSchemaUrl(opts.publicBaseUrl, kind) }),
      refBase: `#/components/schemas/${token(jsonSchemaComponent(kind))}/schema`,
    });
    schemas[jsonSchemaComponent(kind)] = { schemaFormat: JSON_SCHEMA_FORMAT, schema };
    avro[kind.eventId] = JSON.parse(kind.schema) as JsonValue;
  }

  return {
    asyncapi: '3.0.0',
    info: {
      title: opts.title ?? 'ce-gateway event catalog',
      version: opts.version ?? '1.0.0',
      description: [
        'Event kinds of the ce-gateway catalog as CloudEvents on Kafka (binary content mode).',
        'To subscribe to one kind knowing its eventId: take `components.messages.<eventId>`; its channel (the channel whose `messages` has that key) has the topic in `address`; the writer schema is in the registry under `x-schema-registry.subject`; select records whose `ce_type` header equals the eventId.',
      ].join('\n\n'),
    },
    defaultContentType: RECORD_CONTENT_TYPE,
    ...(brokers.length === 0 ? {} : { servers }),
    channels,
    operations,
    components: {
      messages,
      schemas,
      'x-avro-schemas': avro,
    },
  };
}
