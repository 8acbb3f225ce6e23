/**
 * Issue 11: the registry client's TLS and basic-auth settings (SCHEMA_REGISTRY_URL https,
 * SCHEMA_REGISTRY_CA_FILE, SCHEMA_REGISTRY_USERNAME/PASSWORD) against a real Apicurio Registry
 * that serves HTTPS with a private CA's certificate and requires HTTP basic auth
 * (test/helpers/private-registry.ts), with the shared stack's Kafka. The gateway registers the
 * catalog's schemas and publishes (schema look-up) through it; a CA that did not sign the
 * registry's certificate, and a wrong password, stop start-up with the reason (not retriable);
 * the password never appears in the logs.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCa } from '../../scripts/stack/tls.js';
import { structuredPriceEvent } from '../fixtures/events.js';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { UNTRUSTED_CERTIFICATE, gatewayWithLogs, startUpFailure } from '../helpers/logged-gateway.js';
import { startPrivateRegistry } from '../helpers/private-registry.js';
import type { PrivateRegistry } from '../helpers/private-registry.js';
import { stackEnv } from '../helpers/stack.js';

describe('schema registry over HTTPS with basic auth (Apicurio)', { timeout: 120_000 }, () => {
  let registry: PrivateRegistry;
  let wrongCa: string;
  const prefix = `regtls${Date.now().toString(36)}`;
  const catalog = catalogWithOwnTopics(prefix);
  const dir = mkdtempSync(join(tmpdir(), 'ceg-regtls-'));
  const stack = stackEnv();

  beforeAll(async () => {
    registry = await startPrivateRegistry('regtls');
    wrongCa = (await makeCa(join(dir, 'wrong-ca'), 'not the registry CA')).caFile;
  }, 120_000);
  afterAll(async () => {
    await registry?.stop();
    catalog.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  function gateway(vars: Record<string, string>): ReturnType<typeof gatewayWithLogs> {
    return gatewayWithLogs({
      CATALOG_DIR: catalog.dir,
      KAFKA_BROKERS: stack.kafkaBrokers.join(','),
      SCHEMA_REGISTRY_URL: registry.httpsUrl,
      SCHEMA_REGISTRY_USERNAME: registry.username,
      SCHEMA_REGISTRY_PASSWORD: registry.password,
      SCHEMA_REGISTRY_CA_FILE: registry.caFile,
      SUBSCRIPTIONS_TOPIC: `${prefix}-subs`,
      ...vars,
    });
  }

  it('registers the schemas and publishes through HTTPS with the CA file and basic auth', async () => {
    const { gw, logs } = gateway({});
    try {
      const addr = await gw.listen();
      await gw.ready;
      const res = await fetch(`http://127.0.0.1:${addr.port}/events`, { method: 'POST', headers: { 'content-type': 'application/cloudevents+json' }, body: JSON.stringify(structuredPriceEvent()) });
      expect(res.status, await res.clone().text()).toBe(202);
    } finally {
      await gw.close();
    }
    // The subjects are in that registry (read with the same CA and credentials).
    const agent = new Agent({ connect: { ca: readFileSync(registry.caFile, 'utf8') } });
    try {
      const authorization = `Basic ${Buffer.from(`${registry.username}:${registry.password}`).toString('base64')}`;
      const subjects = (await (await undiciFetch(`${registry.httpsUrl}/subjects`, { headers: { authorization }, dispatcher: agent })).json()) as string[];
      expect(subjects).toContain(`${prefix}.trading.price-loading-completed-value`);
      // ...and the registry really requires the credentials.
      expect((await undiciFetch(`${registry.httpsUrl}/subjects`, { dispatcher: agent })).status).toBe(401);
    } finally {
      await agent.close();
    }
    expect(logs()).not.toContain(registry.password);
  });

  it('a CA that did not sign the registry certificate stops start-up, not retriable, with the reason', async () => {
    const { gw, logs } = gateway({ SCHEMA_REGISTRY_CA_FILE: wrongCa });
    try {
      const err = await startUpFailure(gw);
      expect(err.code).toBe('CEG_REGISTRY_UNAVAILABLE');
      expect(err.message).toMatch(UNTRUSTED_CERTIFICATE);
      // The setting to look at is named, as for Kafka's KAFKA_SSL_CA_FILE (break pass hE).
      expect(err.message).toMatch(/check SCHEMA_REGISTRY_CA_FILE and the host of SCHEMA_REGISTRY_URL/);
    } finally {
      await gw.close();
    }
    expect(logs()).toMatch(/bootstrap failed for good/);
  });

  it('a wrong password stops start-up with HTTP 401, not retriable, and is never logged', async () => {
    const { gw, logs } = gateway({ SCHEMA_REGISTRY_PASSWORD: 'not-the-registry-password' });
    try {
      const err = await startUpFailure(gw);
      expect(err.message).toMatch(/HTTP 401/);
      expect(err.message).toMatch(/check SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD\(_FILE\)/);
      expect(err.retriable).toBe(false);
    } finally {
      await gw.close();
    }
    expect(logs()).not.toContain('not-the-registry-password');
    expect(logs()).not.toContain(registry.password);
  });
});
