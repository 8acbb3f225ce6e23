/**
 * The exported AsyncAPI document validates against the official AsyncAPI 3.0.0 JSON Schema
 * (package @asyncapi/specs), with and without the optional servers and URLs, for the project
 * catalog and a catalog with a shared topic.
 */
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { loadCatalog, parseCatalog } from '../../../src/catalog/index.js';
import { buildAsyncApi, toYamlText } from '../../../src/artifacts/export/index.js';
import { ajvDraft7, asyncApi300Schema, errorsOf } from './ajv.js';

const validate = ajvDraft7().compile(asyncApi300Schema());

function sharedTopic(): ReturnType<typeof loadCatalog> {
  const schema = (name: string): string => JSON.stringify({ type: 'record', name, namespace: 'fx', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: { type: 'bytes', logicalType: 'decimal', precision: 9, scale: 2 } }] });
  const files: Record<string, string> = { 'a.avsc': schema('Alpha'), 'b.avsc': schema('Beta') };
  const kind = (eventId: string, name: string, file: string): Record<string, unknown> => ({ eventId, name, description: `${name}.`, topic: 'other.shared', schema: file, key: ['id'], publish: true, owner: 'svc' });
  return parseCatalog(JSON.stringify({ version: 1, kinds: [kind('aaaaaaaa-0000-4000-8000-000000000001', 'Alpha', 'a.avsc'), kind('aaaaaaaa-0000-4000-8000-000000000002', 'Beta', 'b.avsc')] }), (p) => files[p], '/fixture');
}

describe('AsyncAPI document against the official AsyncAPI 3.0.0 JSON Schema', () => {
  it('the project catalog with servers, registry and public URLs is valid', () => {
    const doc = buildAsyncApi(loadCatalog(), {
      kafkaBrokers: ['127.0.0.1:49092', 'kafka-2.example:9092'],
      registryUrl: 'http://127.0.0.1:48081/apis/ccompat/v7',
      publicBaseUrl: 'http://127.0.0.1:8080',
      dataschemaBase: 'http://127.0.0.1:8080/schemas/ids/',
    });
    expect(validate(doc), errorsOf(validate)).toBe(true);
    expect(validate(parseYaml(toYamlText(doc))), errorsOf(validate)).toBe(true);
  });

  it('the project catalog without any option is valid', () => {
    const doc = buildAsyncApi(loadCatalog());
    expect(validate(doc), errorsOf(validate)).toBe(true);
  });

  it('a catalog with two kinds on one topic is valid', () => {
    const doc = buildAsyncApi(sharedTopic(), { kafkaBrokers: ['b:9092'], registryUrl: 'http://r.example' });
    expect(validate(doc), errorsOf(validate)).toBe(true);
  });

  it('the validator refuses a broken document (the check has teeth)', () => {
    const doc = JSON.parse(JSON.stringify(buildAsyncApi(loadCatalog()))) as { operations: Record<string, { action: string }> };
    const first = Object.values(doc.operations)[0]!;
    first.action = 'consume';
    expect(validate(doc)).toBe(false);
  });
});
