/** The AsyncAPI document: one channel per topic, one message per kind keyed by eventId, and enough for a Kafka-native subscriber. */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadCatalog, parseCatalog } from '../../../src/catalog/index.js';
import type { Catalog } from '../../../src/catalog/index.js';
import {
  AVRO_SCHEMA_FORMAT,
  buildAsyncApi,
  exportCatalogFiles,
  naturalJsonSchema,
  toJsonText,
  toYamlText,
} from '../../../src/artifacts/export/index.js';
import type { AsyncApiDocument } from '../../../src/artifacts/export/index.js';

type Obj = Record<string, unknown>;
const catalog = loadCatalog();
const OPTS = {
  kafkaBrokers: ['127.0.0.1:49092'],
  registryUrl: 'http://127.0.0.1:48081/apis/ccompat/v7',
  publicBaseUrl: 'http://gw.example:8080',
  dataschemaBase: 'http://gw.example:8080/schemas/ids/',
} as const;

function at(doc: unknown, pointer: string): unknown {
  if (!pointer.startsWith('#/')) throw new Error(`not a local reference: ${pointer}`);
  let cur: unknown = doc;
  for (const raw of pointer.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof cur !== 'object' || cur === null || !(key in cur)) throw new Error(`unresolved reference ${pointer}`);
    cur = (cur as Obj)[key];
  }
  return cur;
}

function refsOf(v: unknown, out: string[] = []): string[] {
  if (Array.isArray(v)) for (const x of v) refsOf(x, out);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') out.push(x);
      else refsOf(x, out);
    }
  }
  return out;
}

/**
 * What a subscriber in another language does with the document: from an eventId to the topic,
 * the registry subject and the header to filter on — without knowing anything else.
 */
function bind(doc: AsyncApiDocument, eventId: string): { topic: string; subject: string; ceType: unknown; registry: unknown } {
  const channels = doc['channels'] as Record<string, Obj>;
  const found = Object.values(channels).filter((c) => eventId in (c['messages'] as Obj));
  if (found.length !== 1) throw new Error(`eventId in ${found.length} channels`);
  const message = at(doc, (found[0]!['messages'] as Record<string, Obj>)[eventId]!['$ref'] as string) as Obj;
  const registry = message['x-schema-registry'] as Obj;
  const headers = message['headers'] as { properties: Record<string, Obj> };
  return { topic: found[0]!['address'] as string, subject: registry['subject'] as string, ceType: headers.properties['ce_type']!['const'], registry: registry['url'] };
}

function sharedTopicCatalog(): Catalog {
  const schema = (name: string): string => JSON.stringify({ type: 'record', name, namespace: 'fx', fields: [{ name: 'id', type: 'string' }, { name: 'at', type: { type: 'long', logicalType: 'timestamp-micros' } }] });
  const files: Record<string, string> = { 'a.avsc': schema('Alpha'), 'b.avsc': schema('Beta'), 'c.avsc': schema('Gamma') };
  const kind = (eventId: string, name: string, topic: string, file: string): Obj => ({ eventId, name, description: `${name} happened.`, topic, schema: file, key: ['id'], publish: true, owner: 'svc' });
  return parseCatalog(
    JSON.stringify({
      version: 1,
      topics: { 'other.shared': { partitions: 3, retentionMs: -1, cleanupPolicy: 'compact,delete', maxMessageBytes: 2_000_000 } },
      kinds: [
        kind('aaaaaaaa-0000-4000-8000-000000000001', 'Alpha', 'other.shared', 'a.avsc'),
        kind('aaaaaaaa-0000-4000-8000-000000000002', 'Beta', 'other.shared', 'b.avsc'),
        kind('aaaaaaaa-0000-4000-8000-000000000003', 'Gamma', 'other.single', 'c.avsc'),
      ],
    }),
    (p) => files[p],
    '/fixture',
  );
}

describe('AsyncAPI 3.0 document of the catalog', () => {
  const doc = buildAsyncApi(catalog, OPTS);
  const messages = (doc['components'] as Obj)['messages'] as Record<string, Obj>;
  const channels = doc['channels'] as Record<string, Obj>;

  it('has one message per kind, keyed by eventId, in catalog order', () => {
    expect(doc['asyncapi']).toBe('3.0.0');
    expect(Object.keys(messages)).toEqual(catalog.kinds.map((k) => k.eventId));
    for (const k of catalog.kinds) {
      expect(messages[k.eventId]!['name']).toBe(k.name);
      expect(messages[k.eventId]!['x-event-id']).toBe(k.eventId);
    }
  });

  it('has one channel per topic whose address is the topic, listing the kinds on it exactly once', () => {
    expect(Object.keys(channels)).toEqual(catalog.topics.map((t) => t.name));
    for (const k of catalog.kinds) {
      const holders = Object.values(channels).filter((c) => k.eventId in (c['messages'] as Obj));
      expect(holders).toHaveLength(1);
      expect(holders[0]!['address']).toBe(k.topic.name);
    }
  });

  it('has a receive operation per channel whose messages are that channel\'s', () => {
    const ops = doc['operations'] as Record<string, Obj>;
    expect(Object.keys(ops)).toHaveLength(catalog.topics.length);
    for (const t of catalog.topics) {
      const op = ops[`receive.${t.name}`]!;
      expect(op['action']).toBe('receive');
      expect(at(doc, (op['channel'] as Obj)['$ref'] as string)).toBe(channels[t.name]);
      const ids = (op['messages'] as Obj[]).map((m) => (m['$ref'] as string).split('/').pop());
      expect(ids).toEqual(catalog.kinds.filter((k) => k.topic.name === t.name).map((k) => k.eventId));
    }
  });

  it('resolves every local $ref', () => {
    const refs = refsOf(doc);
    expect(refs.length).toBeGreaterThan(catalog.kinds.length * 4);
    for (const r of refs) expect(() => at(doc, r)).not.toThrow();
  });

  it('describes the binary-mode headers with ce_type fixed to the eventId and content-type application/avro', () => {
    for (const k of catalog.kinds) {
      const m = messages[k.eventId]!;
      const h = m['headers'] as { required: string[]; properties: Record<string, Obj> };
      expect(h.properties['ce_type']!['const']).toBe(k.eventId);
      expect(h.properties['ce_eventname']!['const']).toBe(k.name);
      expect(h.properties['ce_eventclass']!['const']).toBe(k.eventClass);
      expect(h.properties['content-type']!['const']).toBe('application/avro');
      expect(Object.keys(h.properties)).toEqual(expect.arrayContaining(['ce_specversion', 'ce_id', 'ce_source', 'ce_time', 'ce_subject', 'ce_dataschema', 'ce_correlationid', 'ce_causationid', 'ce_runid', 'ce_schemaversion', 'ce_partitionkey', 'ce_traceparent']));
      expect(h.required).toEqual(expect.arrayContaining(['ce_type', 'ce_id', 'ce_source', 'ce_partitionkey', 'content-type']));
      expect(String(h.properties['ce_dataschema']!['description'])).toContain(OPTS.dataschemaBase);
      expect(m['contentType']).toBe('application/avro');
    }
  });

  it('carries the Avro schema, the registry subject and URL, the key and the topic configuration', () => {
    const k = catalog.byName('ChartDataReady')!;
    const m = messages[k.eventId]!;
    const payload = m['payload'] as Obj;
    expect(payload['schemaFormat']).toBe(AVRO_SCHEMA_FORMAT);
    expect(at(doc, (payload['schema'] as Obj)['$ref'] as string)).toEqual(JSON.parse(k.schema));
    expect(m['x-schema-registry']).toEqual({ url: OPTS.registryUrl, subject: k.subject, subjectNameStrategy: 'TopicNameStrategy', recordName: k.recordName, compatibility: 'FULL_TRANSITIVE' });
    const kafka = (m['bindings'] as Obj)['kafka'] as Obj;
    expect(kafka['schemaIdLocation']).toBe('payload');
    expect(kafka['schemaLookupStrategy']).toBe('TopicNameStrategy');
    expect(kafka['x-schema-registry-subject']).toBe(k.subject);
    expect((kafka['key'] as Obj)['type']).toBe('string');
    const channelKafka = (channels[k.topic.name]!['bindings'] as Obj)['kafka'] as Obj;
    expect(channelKafka).toEqual({
      topic: 'trading.chart-data-ready',
      partitions: 6,
      topicConfiguration: { 'cleanup.policy': ['delete'], 'retention.ms': 86_400_000, 'max.message.bytes': 1_048_576 },
      bindingVersion: '0.4.0',
    });
    const servers = doc['servers'] as Record<string, Obj>;
    expect(servers['kafka']).toMatchObject({ host: '127.0.0.1:49092', protocol: 'kafka', bindings: { kafka: { schemaRegistryUrl: OPTS.registryUrl, schemaRegistryVendor: 'confluent' } } });
  });

  it('carries the natural-JSON schema of every kind and links it', () => {
    for (const k of catalog.kinds) {
      const m = messages[k.eventId]!;
      const component = at(doc, (m['x-natural-json-schema'] as Obj)['$ref'] as string) as Obj;
      const base = `#/components/schemas/natural-json.${k.eventId}/schema`;
      expect(component['schema']).toEqual(naturalJsonSchema(k, { id: `${OPTS.publicBaseUrl}/schemas/json/${k.eventId}.json`, refBase: base }));
      expect((m['externalDocs'] as Obj)['url']).toBe(`${OPTS.publicBaseUrl}/schemas/json/${k.eventId}.json`);
    }
  });

  it('lets a subscriber go from an eventId to topic, subject and filter value', () => {
    for (const k of catalog.kinds) expect(bind(doc, k.eventId)).toEqual({ topic: k.topic.name, subject: k.subject, ceType: k.eventId, registry: OPTS.registryUrl });
  });

  it('works for another catalog: a shared topic uses TopicRecordNameStrategy, compact topics list both policies', () => {
    const other = sharedTopicCatalog();
    const d = buildAsyncApi(other, { registryUrl: 'http://r.example' });
    expect(d['servers']).toBeUndefined();
    expect(Object.keys(d['channels'] as Obj)).toEqual(['other.shared', 'other.single']);
    expect(bind(d, 'aaaaaaaa-0000-4000-8000-000000000002')).toEqual({ topic: 'other.shared', subject: 'other.shared-fx.Beta', ceType: 'aaaaaaaa-0000-4000-8000-000000000002', registry: 'http://r.example' });
    expect(bind(d, 'aaaaaaaa-0000-4000-8000-000000000003').subject).toBe('other.single-value');
    const shared = (((d['channels'] as Record<string, Obj>)['other.shared']!['bindings'] as Obj)['kafka'] as Obj)['topicConfiguration'];
    expect(shared).toEqual({ 'cleanup.policy': ['compact', 'delete'], 'retention.ms': -1, 'max.message.bytes': 2_000_000 });
    const beta = ((d['components'] as Obj)['messages'] as Record<string, Obj>)['aaaaaaaa-0000-4000-8000-000000000002']!;
    expect(((beta['bindings'] as Obj)['kafka'] as Obj)['schemaLookupStrategy']).toBe('TopicRecordNameStrategy');
  });

  it('is deterministic, and the YAML form is the same document', () => {
    expect(toJsonText(buildAsyncApi(loadCatalog(), OPTS))).toBe(toJsonText(doc));
    expect(parseYaml(toYamlText(doc))).toEqual(doc);
  });

  it('export writes the document and one JSON Schema per kind', () => {
    const files = exportCatalogFiles(catalog, OPTS, 'yaml');
    expect(files.map((f) => f.path)).toEqual(['asyncapi.yaml', ...catalog.kinds.map((k) => `schemas/json/${k.eventId}.json`)]);
    expect(parseYaml(files[0]!.content)).toEqual(doc);
    expect(JSON.parse(files[1]!.content)).toEqual(naturalJsonSchema(catalog.kinds[0]!, { id: `${OPTS.publicBaseUrl}/schemas/json/${catalog.kinds[0]!.eventId}.json` }));
  });
});
