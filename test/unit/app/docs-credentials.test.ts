/**
 * The documents `serve` publishes without authentication (GET /asyncapi.json, /asyncapi.yaml) name
 * the registry by its URL without the credentials SCHEMA_REGISTRY_URL may carry (a tester found
 * `http://admin:pw@…` in them verbatim).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryRegistry } from '../../../src/registry/index.js';
import { startGateway } from '../../helpers/gateway.js';
import type { TestGateway } from '../../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  // The registry the gateway talks to is in memory: the configured URL only feeds the documents.
  gw = await startGateway({ stack: false, env: { SCHEMA_REGISTRY_URL: 'http://admin:s3cretpw@reg.example:8081/apis/ccompat/v7' }, overrides: { registry: createMemoryRegistry() } });
});
afterAll(async () => {
  await gw.close();
});

describe('served AsyncAPI document', () => {
  it.each(['/asyncapi.json', '/asyncapi.yaml'])('%s names the registry without credentials', async (path) => {
    const res = await fetch(`${gw.url}${path}`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('http://reg.example:8081/apis/ccompat/v7');
    expect(text).not.toContain('s3cretpw');
    expect(text).not.toContain('admin');
  });
});
