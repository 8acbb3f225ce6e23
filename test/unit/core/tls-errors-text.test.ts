/**
 * tlsVerificationFailureInText against Node's own words: real TLS handshakes on loopback with
 * certificates openssl makes here (the stack's CA and server certificate), each failing a
 * different check, and the text kafkajs logs for them ("Connection error: <message>", no code).
 * The code read from the text must be the code Node gave the error.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureStackTls } from '../../../scripts/stack/tls.js';
import { tlsVerificationFailure, tlsVerificationFailureInText } from '../../../src/core/tls-errors.js';

let dir: string;
let pem: { ca: string; cert: string; key: string; caKey: string; selfCert: string; selfKey: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tls-text-'));
  const f = await ensureStackTls(dir);
  const self = { cert: join(dir, 'self.pem'), key: join(dir, 'self-key.pem') };
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', self.key, '-out', self.cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=DNS:localhost'], { stdio: 'ignore' });
  pem = { ca: readFileSync(f.caFile, 'utf8'), cert: readFileSync(f.certFile, 'utf8'), key: readFileSync(f.keyFile, 'utf8'), caKey: readFileSync(join(dir, 'ca-key.pem'), 'utf8'), selfCert: readFileSync(self.cert, 'utf8'), selfKey: readFileSync(self.key, 'utf8') };
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The error of one handshake with a server presenting `cert` (+ `key`), the client trusting `ca` (none: Node's roots) and naming `servername`. */
async function handshakeError(server: { cert: string; key: string }, client: { ca?: string; servername: string }): Promise<NodeJS.ErrnoException> {
  const srv = tls.createServer({ cert: server.cert, key: server.key }, (s) => s.end());
  srv.on('tlsClientError', () => undefined);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  try {
    const { port } = srv.address() as AddressInfo;
    return await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, servername: client.servername, ...(client.ca === undefined ? {} : { ca: client.ca }) });
      s.on('secureConnect', () => {
        s.destroy();
        reject(new Error('the handshake passed'));
      });
      s.on('error', (e: NodeJS.ErrnoException) => resolve(e));
    });
  } finally {
    await new Promise<void>((r) => srv.close(() => r()));
  }
}

describe('tlsVerificationFailureInText (kafkajs logs a failed certificate check as text only)', () => {
  it("reads the code Node gave each real handshake failure from kafkajs's line for it", async () => {
    const cases = [
      await handshakeError({ cert: pem.cert, key: pem.key }, { servername: 'localhost' }), // leaf only, CA unknown
      await handshakeError({ cert: pem.cert + pem.ca, key: pem.key }, { servername: 'localhost' }), // chain with an untrusted root
      await handshakeError({ cert: pem.selfCert, key: pem.selfKey }, { servername: 'localhost' }), // self-signed
      await handshakeError({ cert: pem.ca, key: pem.caKey }, { ca: pem.ca, servername: 'localhost' }), // a CA's certificate as a server's
      await handshakeError({ cert: pem.cert, key: pem.key }, { ca: pem.ca, servername: 'broker.example' }), // trusted, wrong name
    ];
    expect(new Set(cases.map((e) => e.code))).toEqual(new Set(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'INVALID_PURPOSE', 'ERR_TLS_CERT_ALTNAME_INVALID']));
    for (const e of cases) {
      const line = `Failed to connect to seed broker, trying another broker from the list: Connection error: ${e.message}`;
      expect(tlsVerificationFailureInText(line), e.message).toContain(`(${e.code}: `);
      // Same words as the error itself gives when its code is known.
      expect(tlsVerificationFailure(e), e.message).toMatch(/^TLS certificate not trusted \(/);
    }
  }, 30_000);

  it('says nothing of an outage, a timeout or a refused login, whatever surrounds them', () => {
    const outage = fc.constantFrom(
      'Connection error: connect ECONNREFUSED 127.0.0.1:19095',
      'Connection error: Client network socket disconnected before secure TLS connection was established',
      'Connection timeout',
      'Request Metadata(key: 3, version: 6) timed out',
      'Closed connection',
      'SASL SCRAM SHA512 authentication failed',
      'Connection error: write EPROTO 40F8:error:0A00010B:SSL routines:ssl3_get_record:wrong version number',
    );
    fc.assert(fc.property(fc.string({ maxLength: 40 }), outage, fc.string({ maxLength: 40 }), (before, text, after) => {
      const line = `${before.replace(/cert|sign|trust|host|valid|expir|revok|purpose|CA|length|chain|reject|mismatch/gi, '')}${text}${after.replace(/cert|sign|trust|host|valid|expir|revok|purpose|CA|length|chain|reject|mismatch/gi, '')}`;
      expect(tlsVerificationFailureInText(line)).toBeUndefined();
    }));
  });
});
