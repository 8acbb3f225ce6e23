/**
 * OPS_PORT: `serve`'s plain operations listener. The API port here speaks HTTPS (TLS_CERT_FILE)
 * and needs an admin partner's key for /metrics (PARTNERS_FILE, METRICS_AUTH=admin, the default);
 * the ops port answers GET/HEAD /metrics, /healthz and /readyz over plain HTTP without a key, with
 * the API port's answers, and nothing else (404/405 problem+json). It follows the drain (/readyz
 * 503 "shutting down") and is closed by close(); one that cannot bind fails listen() and leaves no
 * listener behind.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer as createNetServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { isGatewayError } from '../../src/core/errors.js';
import { loadConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/index.js';
import { partnersSetup } from '../helpers/partners.js';
import type { PartnersSetup } from '../helpers/partners.js';
import { freePort } from '../helpers/ports.js';

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

const dir = mkdtempSync(join(tmpdir(), 'ceg-ops-port-'));
const certFile = join(dir, 'tls.crt');
const keyFile = join(dir, 'tls.key');
let ca: string;
let setup: PartnersSetup;
let gw: Gateway;
let apiPort: number;
let opsPort: number;

/** One request; `tls`: to the API port over HTTPS (trusting the test certificate). */
function ask(port: number, path: string, o: { readonly method?: string; readonly key?: string; readonly tls?: boolean } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { host: '127.0.0.1', port, path, method: o.method ?? 'GET', headers: o.key === undefined ? {} : { authorization: `Bearer ${o.key}` }, agent: false as const };
    const req = o.tls === true ? httpsRequest({ ...options, ca }) : httpRequest(options);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether a TCP connection to the port is refused (nothing listens). */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** The metric names of a text-format body (its `# TYPE` lines). */
const metricNames = (body: string): string[] => body.split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2]!).sort();

beforeAll(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=ops-port', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  ca = readFileSync(certFile, 'utf8');
  setup = partnersSetup('ceg-ops-port');
  process.env.TEST_GLOBEX_KEY_SHA256 = setup.env.TEST_GLOBEX_KEY_SHA256;
  // SHUTDOWN_TIMEOUT_MS 4000: the drain test's request held open keeps the drain for up to 2 s.
  gw = createGateway(
    loadConfig({ PORT: '0', HOST: '127.0.0.1', OPS_PORT: '0', LOG_LEVEL: 'silent', TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile, SHUTDOWN_TIMEOUT_MS: '4000', SUBSCRIPTIONS_TOPIC: 'ceg-ops-port.subscriptions', ...setup.env }),
    createLogger({ level: 'silent' }),
  );
  apiPort = (await gw.listen()).port;
  opsPort = gw.opsAddress()!.port;
  await gw.ready;
  await gw.subscriptionsLoaded();
});

afterAll(async () => {
  await gw?.close();
  setup?.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

describe('OPS_PORT: plain /metrics, /healthz, /readyz beside an HTTPS API that wants a key', () => {
  it('listens on its own port, beside the API port', () => {
    expect(opsPort).toBeGreaterThan(0);
    expect(opsPort).not.toBe(apiPort);
    expect(gw.opsAddress()!.address).toBe('127.0.0.1');
  });

  it('/metrics: the ops port answers without a key over plain HTTP; the API port answers 401 without one and the same metrics to an admin', async () => {
    const ops = await ask(opsPort, '/metrics');
    expect(ops.status).toBe(200);
    expect(ops.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ops.body).toMatch(/^ce_gateway_ready 1$/m);
    const noKey = await ask(apiPort, '/metrics', { tls: true });
    expect(noKey.status).toBe(401);
    expect(noKey.headers['content-type']).toBe('application/problem+json');
    const wrongKey = await ask(apiPort, '/metrics', { tls: true, key: setup.keys.acme });
    expect(wrongKey.status).toBe(403);
    const admin = await ask(apiPort, '/metrics', { tls: true, key: setup.keys.ops });
    expect(admin.status).toBe(200);
    expect(admin.headers['content-type']).toBe(ops.headers['content-type']);
    expect(metricNames(ops.body)).toEqual(metricNames(admin.body));
    expect(metricNames(ops.body).length).toBeGreaterThan(10);
    // A key sent to the ops port is neither needed nor looked at.
    expect((await ask(opsPort, '/metrics', { key: 'not-a-key' })).status).toBe(200);
  });

  it('/readyz and /healthz: the same status and body on both ports', async () => {
    for (const path of ['/readyz', '/healthz', '/readyz?verbose=1']) {
      const [api, ops] = await Promise.all([ask(apiPort, path, { tls: true }), ask(opsPort, path)]);
      expect(ops.status, path).toBe(200);
      expect(ops.status, path).toBe(api.status);
      expect(ops.headers['content-type'], path).toBe(api.headers['content-type']);
      expect(JSON.parse(ops.body), path).toEqual(JSON.parse(api.body));
    }
    expect(JSON.parse((await ask(opsPort, '/readyz')).body)).toMatchObject({ status: 'ready', checks: { broker: true, schemaRegistry: true, bootstrapped: true } });
  });

  it('HEAD: the status and headers without a body', async () => {
    for (const path of ['/metrics', '/healthz', '/readyz']) {
      const head = await ask(opsPort, path, { method: 'HEAD' });
      expect(head.status, path).toBe(200);
      expect(head.body, path).toBe('');
    }
  });

  it('every other route 404, every other method 405, as problem+json; the plain port speaks no TLS', async () => {
    for (const path of ['/', '/events', '/subscriptions', '/openapi.json', '/catalog', '/console', '/metrics/', '/healthz/x']) {
      const r = await ask(opsPort, path, { key: setup.keys.ops });
      expect(r.status, path).toBe(404);
      expect(r.headers['content-type'], path).toBe('application/problem+json');
      expect(JSON.parse(r.body), path).toMatchObject({ status: 404, code: 'CEG_NOT_FOUND' });
    }
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const r = await ask(opsPort, '/metrics', { method });
      expect(r.status, method).toBe(405);
      expect(r.headers.allow, method).toBe('GET, HEAD');
      expect(JSON.parse(r.body), method).toMatchObject({ status: 405, code: 'CEG_METHOD_NOT_ALLOWED' });
    }
    await expect(ask(opsPort, '/healthz', { tls: true })).rejects.toThrow();
  });
});

describe('OPS_PORT: start and shutdown', () => {
  it('unset: no ops listener', async () => {
    const plain = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent' }), createLogger({ level: 'silent' }));
    try {
      await plain.listen();
      expect(plain.opsAddress()).toBeUndefined();
    } finally {
      await plain.close();
    }
  });

  it('a port that is taken: listen() fails naming OPS_PORT, and the API port is not left listening', async () => {
    const taken = createNetServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as { port: number }).port;
    const port = await freePort();
    const g = createGateway(loadConfig({ PORT: String(port), HOST: '127.0.0.1', OPS_PORT: String(takenPort), LOG_LEVEL: 'silent' }), createLogger({ level: 'silent' }));
    try {
      const err = await g.listen().then(() => undefined, (e: unknown) => e);
      expect(isGatewayError(err, 'CEG_INVALID_OPTIONS')).toBe(true);
      expect((err as Error).message).toMatch(new RegExp(`cannot listen on the ops port 127\\.0\\.0\\.1:${takenPort} \\(OPS_PORT, OPS_HOST\\): .*EADDRINUSE`));
      expect(await refused(port)).toBe(true);
      expect(g.opsAddress()).toBeUndefined();
    } finally {
      await g.close();
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
  });

  // Last, as it closes the shared gateway.
  it('during the drain the ops port says "shutting down" (503) and still serves /metrics; after close() nothing listens on it', async () => {
    // A request in progress on the API port (headers sent, body not) holds the drain open.
    const held = tlsConnect({ host: '127.0.0.1', port: apiPort, ca });
    await new Promise<void>((resolve, reject) => {
      held.once('secureConnect', resolve);
      held.once('error', reject);
    });
    held.on('error', () => undefined);
    held.write(`POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${setup.keys.acme}\r\nContent-Type: application/cloudevents+json\r\nContent-Length: 1000\r\n\r\n{`);
    await new Promise((r) => setTimeout(r, 200));
    const closed = gw.close();
    const ready = await ask(opsPort, '/readyz');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toMatchObject({ status: 'shutting down' });
    expect((await ask(opsPort, '/healthz')).status).toBe(200);
    expect((await ask(opsPort, '/metrics')).status).toBe(200);
    await closed;
    held.destroy();
    expect(await refused(opsPort)).toBe(true);
    expect(await refused(apiPort)).toBe(true);
  });
});
