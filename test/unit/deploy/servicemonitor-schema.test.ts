import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { SCHEMA_FILE, toJsonSchema } from '../../../scripts/deploy/vendor-servicemonitor-schema.js';

describe('the vendored ServiceMonitor schema', () => {
  const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as { $comment: string };
  const validate = new Ajv({ allErrors: true, strict: false, validateFormats: false }).compile(schema);
  const sm = (endpoint: Record<string, unknown>) => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: { name: 'gw' },
    spec: { selector: { matchLabels: { app: 'gw' } }, endpoints: [{ port: 'http', path: '/metrics', ...endpoint }] },
  });

  it('names its source and version', () => {
    expect(schema.$comment).toMatch(/prometheus-operator@v\d+\.\d+\.\d+, example\/prometheus-operator-crd\/monitoring\.coreos\.com_servicemonitors\.yaml/);
  });

  it('accepts what the chart renders and refuses unknown fields, wrong types and another kind', () => {
    expect(validate(sm({ interval: '30s', scrapeTimeout: '10s' }))).toBe(true);
    expect(validate(sm({ scrapeTimeOut: '10s' }))).toBe(false);
    expect(validate(sm({ interval: 30 }))).toBe(false);
    expect(validate({ ...sm({}), kind: 'PodMonitor' })).toBe(false);
    expect(validate({ ...sm({}), spec: undefined })).toBe(false);
  });

  it('converts OpenAPI v3 the way strict kubeconform schemas do', () => {
    expect(toJsonSchema({ type: 'object', properties: { port: { 'x-kubernetes-int-or-string': true }, n: { type: 'string', nullable: true } } })).toEqual({
      type: 'object',
      properties: { port: { anyOf: [{ type: 'integer' }, { type: 'string' }] }, n: { type: ['string', 'null'] } },
      additionalProperties: false,
    });
    expect(toJsonSchema({ type: 'object', properties: { a: { type: 'string' } }, 'x-kubernetes-preserve-unknown-fields': true })).toEqual({ type: 'object', properties: { a: { type: 'string' } } });
    // A field named like a keyword stays a field.
    expect(toJsonSchema({ type: 'object', properties: { nullable: { type: 'boolean' } } })).toEqual({ type: 'object', properties: { nullable: { type: 'boolean' } }, additionalProperties: false });
  });
});
