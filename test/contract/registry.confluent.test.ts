import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCatalogDir, parseCatalog, registerCatalog } from '../../src/catalog/index.js';
import { createConfluentRegistry } from '../../src/registry/index.js';
import { stackEnv, uniqueName } from '../helpers/stack.js';
import { registryContract } from './registry.contract.js';
import { caughtAsync as failure } from '../helpers/errors.js';

// The stack's registry is Apicurio with a global BACKWARD rule; its ccompat API cannot set a subject to NONE.
registryContract('confluent REST (Apicurio ccompat)', () => Promise.resolve(createConfluentRegistry({ url: stackEnv().schemaRegistryUrl, timeoutMs: 10_000 })), {
  subjectLevelNone: false,
  subjectListCap: 1000,
});

describe('Confluent REST client: transport failures and auth', () => {
  let server: Server;
  let base: string;
  const seen: IncomingHttpHeaders[] = [];
  let idHits = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      if (req.url?.startsWith('/hang/config')) return; // never answers
      if (req.url?.startsWith('/down/config')) {
        res.writeHead(503).end('{"error_code":50301,"message":"down"}');
        return;
      }
      if (req.url?.startsWith('/confluent-route/')) {
        // Confluent's own answer for a path it has no route for: error_code 404, not 4040x.
        res.writeHead(404, { 'content-type': 'application/json' }).end('{"error_code":404,"message":"HTTP 404 Not Found"}');
        return;
      }
      if (req.url?.startsWith('/proxy/')) {
        res.writeHead(404, { 'content-type': 'text/html' }).end('<html><body>Not Found</body></html>');
        return;
      }
      if (req.url?.startsWith('/echo/')) {
        // A registry (or a proxy before it) that echoes the request in its error message.
        const status = req.url.startsWith('/echo/401/') ? 401 : 500;
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: status * 100 + 1, message: `failed ${req.method} ${req.url} authorization=${req.headers.authorization} token=${req.headers.authorization?.slice(6)} user=${Buffer.from(req.headers.authorization?.slice(6) ?? '', 'base64').toString()}` }));
        return;
      }
      if (req.url?.startsWith('/denied/config')) {
        res.writeHead(401).end('{"error_code":40101,"message":"unauthorized"}');
        return;
      }
      if (req.url === '/ok/schemas/ids/5') {
        idHits++;
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"schema":"\\"string\\""}'), 20);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"compatibilityLevel":"BACKWARD"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('maps connection refused to a retriable CEG_REGISTRY_UNAVAILABLE; isHealthy is false', async () => {
    const r = createConfluentRegistry({ url: 'http://127.0.0.1:1', timeoutMs: 2000 });
    const err = await failure(r.latest('x-value'));
    expect([err.code, err.retriable]).toEqual(['CEG_REGISTRY_UNAVAILABLE', true]);
    expect(await r.isHealthy()).toBe(false);
  });

  it('gives up after timeoutMs with a retriable CEG_REGISTRY_UNAVAILABLE', async () => {
    const r = createConfluentRegistry({ url: `${base}/hang`, timeoutMs: 200 });
    const started = Date.now();
    const err = await failure(r.setCompatibility('x', 'FULL'));
    expect([err.code, err.retriable]).toEqual(['CEG_REGISTRY_UNAVAILABLE', true]);
    expect(err.message).toMatch(/within 200 ms/);
    expect(Date.now() - started).toBeLessThan(8000); // the route hangs for good: slack for a loaded machine
  });

  it('maps 5xx to retriable and 401 to non-retriable CEG_REGISTRY_UNAVAILABLE', async () => {
    const down = await failure(createConfluentRegistry({ url: `${base}/down` }).setCompatibility('x', 'FULL'));
    expect([down.code, down.retriable, down.details['status']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', true, 503]);
    const denied = await failure(createConfluentRegistry({ url: `${base}/denied` }).setCompatibility('x', 'FULL'));
    expect([denied.code, denied.retriable, denied.details['status']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, 401]);
  });

  it('sends basic auth from the options and never exposes the password', async () => {
    seen.length = 0;
    const r = createConfluentRegistry({ url: `${base}/ok`, username: 'svc', password: 's3cret' });
    expect(await r.isHealthy()).toBe(true);
    expect(seen[0]?.authorization).toBe(`Basic ${Buffer.from('svc:s3cret').toString('base64')}`);
    expect(JSON.stringify(r)).not.toContain('s3cret');
    const err = await failure(createConfluentRegistry({ url: 'http://svc:s3cret@127.0.0.1:1' }).latest('x'));
    expect(JSON.stringify(err.details)).not.toContain('s3cret');
    expect(err.message).not.toContain('s3cret');
  });

  it('takes its credentials out of a registry message that echoes them (a 500 and a 401, from the options and from the URL)', async () => {
    // Before: the message was quoted as sent, so `auth=Basic …` reached the log, /readyz and CI output.
    const port = new URL(base).port;
    for (const r of [createConfluentRegistry({ url: `${base}/echo/500`, username: 'svc', password: 'p4ss-w0rd' }), createConfluentRegistry({ url: `http://svc:p4ss-w0rd@127.0.0.1:${port}/echo/401` })]) {
      const err = await failure(r.setCompatibility('x', 'FULL'));
      expect(err.code).toBe('CEG_REGISTRY_UNAVAILABLE');
      const token = Buffer.from('svc:p4ss-w0rd').toString('base64');
      for (const secret of ['p4ss-w0rd', token]) expect(err.message).not.toContain(secret);
      // The rest of the message stays: it says what the registry answered.
      expect(err.message).toMatch(/HTTP (500|401): failed PUT \/echo\/(500|401)\/config\/x authorization=\[redacted\] token=\[redacted\] user=\[redacted\](: check SCHEMA_REGISTRY_USERNAME and SCHEMA_REGISTRY_PASSWORD\(_FILE\) \(or the user info of SCHEMA_REGISTRY_URL\); retrying cannot help)?$/);
    }
  });

  it('reads a 404 without a Confluent not-found error_code as a wrong registry URL, never as "no versions"', async () => {
    for (const path of ['confluent-route', 'proxy']) {
      const r = createConfluentRegistry({ url: `http://svc:s3cret@127.0.0.1:${new URL(base).port}/${path}` });
      for (const call of [() => r.versions('x-value'), () => r.latest('x-value'), () => r.schemaById(7), () => r.setCompatibility('x-value', 'NONE')]) {
        const err = await failure(call());
        expect([err.code, err.retriable, err.details['misconfigured'], err.details['status']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, true, 404]);
        expect(err.message).toContain(`http://127.0.0.1:${new URL(base).port}/${path}/`);
        expect(err.message).toContain('/apis/ccompat/v7');
        expect(`${err.message} ${JSON.stringify(err.details)}`).not.toContain('s3cret');
      }
    }
  });

  it('refuses a subjects answer that is not a list of names instead of reading it as no subjects', async () => {
    // The server's fallback answers 200 {"compatibilityLevel": …} for /ok/subjects.
    const err = await failure(createConfluentRegistry({ url: `${base}/ok` }).subjects!());
    expect([err.code, err.retriable, err.details['misconfigured']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, true]);
    expect(err.message).toContain('other than a list of subject names');
    const proxy = await failure(createConfluentRegistry({ url: `${base}/proxy` }).subjects!());
    expect([proxy.code, proxy.retriable, proxy.details['status']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, 404]);
  });

  it('refuses a versions answer that is not a list of numbers (a page, another API) instead of reading it as none', async () => {
    // The server's fallback answers 200 {"compatibilityLevel": …} for /ok/subjects/x-value/versions.
    const err = await failure(createConfluentRegistry({ url: `${base}/ok` }).versions('x-value'));
    expect([err.code, err.retriable, err.details['misconfigured']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, true]);
    expect(err.message).toContain('other than a list of version numbers');
  });

  it('fetches a schema id once for concurrent callers and caches it', async () => {
    const r = createConfluentRegistry({ url: `${base}/ok` });
    const [a, b] = await Promise.all([r.schemaById(5), r.schemaById(5)]);
    expect(await r.schemaById(5)).toBe('"string"');
    expect([a, b]).toEqual(['"string"', '"string"']);
    expect(idHits).toBe(1);
  });
});

describe('registerCatalog against the real registry', () => {
  it('registers every shipped schema (under run-unique subjects) and is idempotent', async () => {
    const dir = defaultCatalogDir();
    const run = `ceg-cat-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    const doc = parseYaml(readFileSync(join(dir, 'catalog.yaml'), 'utf8')) as { topics: Record<string, unknown>; kinds: { topic: string }[] };
    doc.topics = Object.fromEntries(Object.entries(doc.topics).map(([k, v]) => [`${run}.${k}`, v]));
    for (const k of doc.kinds) k.topic = `${run}.${k.topic}`;
    const catalog = parseCatalog(JSON.stringify(doc), (p) => readFileSync(join(dir, p), 'utf8'), dir);
    const registry = createConfluentRegistry({ url: stackEnv().schemaRegistryUrl, timeoutMs: 10_000 });
    const first = await registerCatalog(registry, catalog);
    expect(first.size).toBe(catalog.kinds.length);
    for (const kind of catalog.kinds) {
      const r = first.get(kind.eventId)!;
      expect(r.subject).toBe(kind.subject);
      expect(r.version).toBe(1);
      expect(JSON.parse(await registry.schemaById(r.id))).toEqual(JSON.parse(kind.schema));
    }
    const again = await registerCatalog(registry, catalog);
    expect([...again.values()].map((r) => r.id)).toEqual([...first.values()].map((r) => r.id));
  });
});

describe('Confluent REST client on the real registry: concurrent starts', () => {
  it('sets the compatibility level of a new subject from several callers at once (two gateways starting together) without a 409', async () => {
    const registry = createConfluentRegistry({ url: stackEnv().schemaRegistryUrl });
    const subject = `race-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}-value`;
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => registry.setCompatibility(subject, 'FULL_TRANSITIVE')));
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r).reason))).toEqual([]);
  });
});

describe('Confluent REST client on the real registry: a base URL without the API path', () => {
  // Apicurio's root answers 404 with a RESTEasy "could not find resource" problem (no error_code)
  // for /subjects/…: the URL misses /apis/ccompat/v7. A tester saw `schemas check` pass ("new, no
  // earlier version", exit 0) against it, because every such 404 read as "subject not found".
  const api = (): URL => new URL(stackEnv().schemaRegistryUrl);
  const root = (): string => `${api().protocol}//svc:s3cret@${api().host}`;

  it('fails versions, latest, schemaById and setCompatibility with a non-retriable error naming the URL and the API base', async () => {
    const r = createConfluentRegistry({ url: root(), timeoutMs: 10_000 });
    const subject = `${uniqueName('ceg-regurl')}-value`;
    for (const call of [() => r.versions(subject), () => r.latest(subject), () => r.schemaById(1), () => r.setCompatibility(subject, 'NONE')]) {
      const err = await failure(call());
      expect([err.code, err.retriable, err.details['misconfigured'], err.details['status']]).toEqual(['CEG_REGISTRY_UNAVAILABLE', false, true, 404]);
      expect(err.message).toContain(`${api().protocol}//${api().host}/`);
      expect(err.message).toContain('/apis/ccompat/v7');
      expect(`${err.message} ${JSON.stringify(err.details)}`).not.toContain('s3cret');
    }
    expect(await r.isHealthy()).toBe(false);
  });

  it('still reads the real API\'s "subject not found" (40401) as no versions, and an unknown id (40403) as not found', async () => {
    const r = createConfluentRegistry({ url: stackEnv().schemaRegistryUrl, timeoutMs: 10_000 });
    const subject = `${uniqueName('ceg-regurl')}-value`;
    expect(await r.versions(subject)).toEqual([]);
    const latest = await failure(r.latest(subject));
    expect([latest.code, latest.details['registryErrorCode']]).toEqual(['CEG_SCHEMA_NOT_FOUND', 40401]);
    const id = await failure(r.schemaById(2_000_000_001));
    expect([id.code, id.details['registryErrorCode']]).toEqual(['CEG_SCHEMA_NOT_FOUND', 40403]);
    // Relaxing a subject with no versions to NONE is still nothing to do (Apicurio answers 40401).
    await expect(r.setCompatibility(subject, 'NONE')).resolves.toBeUndefined();
  });
});
