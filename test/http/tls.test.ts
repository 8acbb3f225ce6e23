/**
 * HTTPS (issue 11): the gateway serves TLS with a certificate generated here (openssl), and takes
 * a new certificate and key written over the files without a restart; a pair that does not match
 * is refused at start naming the variables, and ignored (old pair kept) on reload.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { createLogger } from '../../src/observability/index.js';
import { waitFor } from '../helpers/wait.js';

const dir = mkdtempSync(join(tmpdir(), 'ceg-tls-'));

function makePair(name: string): { cert: string; key: string; fingerprint: string } {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`, '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  return { cert: readFileSync(cert, 'utf8'), key: readFileSync(key, 'utf8'), fingerprint: new X509Certificate(readFileSync(cert)).fingerprint256 };
}

/** The fingerprint of the certificate the server presents now. */
function served(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

function healthz(port: number, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/healthz', ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

describe('HTTPS', () => {
  const first = makePair('first');
  const second = makePair('second');
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  let gw: Gateway;
  let port: number;

  beforeAll(async () => {
    writeFileSync(certFile, first.cert);
    writeFileSync(keyFile, first.key);
    gw = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile }), createLogger({ level: 'silent' }));
    port = (await gw.listen()).port;
  });
  afterAll(async () => {
    await gw?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves TLS with the certificate of the files; plain HTTP gets no answer', async () => {
    expect(await served(port)).toBe(first.fingerprint);
    expect(await healthz(port, first.cert)).toBe(200);
    await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    expect(gw.config.publicBaseUrl).toMatch(/^https:/);
  });

  it('a mismatched pair written over the files is ignored; the next good pair is served without a restart', async () => {
    writeFileSync(keyFile, second.key); // key of the second, certificate of the first: does not load
    await new Promise((r) => setTimeout(r, 2500));
    expect(await served(port)).toBe(first.fingerprint);
    writeFileSync(certFile, second.cert);
    await waitFor('the second certificate', async () => (await served(port)) === second.fingerprint, 15_000, 200);
    expect(await healthz(port, second.cert)).toBe(200);
  });

  it('a pair that does not match refuses to start, naming the variables', async () => {
    writeFileSync(join(dir, 'bad.key'), first.key);
    writeFileSync(join(dir, 'bad.crt'), second.cert);
    const bad = createGateway(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', TLS_CERT_FILE: join(dir, 'bad.crt'), TLS_KEY_FILE: join(dir, 'bad.key') }), createLogger({ level: 'silent' }));
    try {
      await expect(bad.listen()).rejects.toThrow(/TLS_CERT_FILE \/ TLS_KEY_FILE: not a matching/);
    } finally {
      await bad.close();
    }
  });
});
