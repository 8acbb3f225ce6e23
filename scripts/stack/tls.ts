/**
 * The stack's throw-away certificate authority and its server certificate (issue 11: the Kafka and
 * registry clients' TLS tested against real listeners). Made once with openssl and kept in
 * `.stack/tls/`; a stack made before this module gets them on its next `stack:up`.
 * Shapes: PEM files. `ca.pem` is what clients trust (`KAFKA_SSL_CA_FILE`, `SCHEMA_REGISTRY_CA_FILE`);
 * `server.pem` + `server-key.pem` (unencrypted PKCS#8) serve 127.0.0.1 and localhost (subjectAltName);
 * `server-keystore.pem` is the key followed by the certificate chain, the form of Kafka's
 * `ssl.keystore.type=PEM` keystore file (KIP-651).
 * The CA key never leaves the folder (mode 0600); nothing here is meant for anything but loopback.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileAsync } from './process.js';

export interface StackTlsFiles {
  readonly dir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** Key + certificate + CA in one PEM file (Kafka `ssl.keystore.location` with `ssl.keystore.type=PEM`). */
  readonly keystoreFile: string;
}

export function tlsFiles(dir: string): StackTlsFiles {
  return { dir, caFile: join(dir, 'ca.pem'), certFile: join(dir, 'server.pem'), keyFile: join(dir, 'server-key.pem'), keystoreFile: join(dir, 'server-keystore.pem') };
}

async function openssl(args: readonly string[]): Promise<void> {
  try {
    await execFileAsync('openssl', [...args]);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    if (e.code === 'ENOENT') throw new Error('openssl is missing: install it (Debian: apt-get install openssl); the stack makes its test certificates with it.');
    throw new Error(`openssl ${args[0] ?? ''} failed: ${(e.stderr ?? e.message).slice(-400)}`);
  }
}

/** A self-signed CA (RSA 2048, 10 years) at `<dir>/ca.pem`, its key at `<dir>/ca-key.pem`. Tests use it for a "wrong CA" too. */
export async function makeCa(dir: string, commonName: string): Promise<{ caFile: string; caKeyFile: string }> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const caFile = join(dir, 'ca.pem');
  const caKeyFile = join(dir, 'ca-key.pem');
  await openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', caKeyFile, '-out', caFile, '-days', '3650', '-subj', `/CN=${commonName}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return { caFile, caKeyFile };
}

/**
 * Makes the CA and the server certificate unless all files exist already (idempotent; a half-made
 * folder is made again). Returns the files.
 */
export async function ensureStackTls(dir: string): Promise<StackTlsFiles> {
  const f = tlsFiles(dir);
  if ([f.caFile, f.certFile, f.keyFile, f.keystoreFile].every((p) => existsSync(p))) return f;
  rmSync(dir, { recursive: true, force: true });
  const { caFile, caKeyFile } = await makeCa(dir, 'ce-gateway stack CA (test only)');
  const csr = join(dir, 'server.csr');
  const ext = join(dir, 'server.ext');
  writeFileSync(ext, ['subjectAltName=IP:127.0.0.1,DNS:localhost', 'basicConstraints=CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment', 'extendedKeyUsage=serverAuth,clientAuth', ''].join('\n'));
  await openssl(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f.keyFile, '-out', csr, '-subj', '/CN=127.0.0.1']);
  await openssl(['x509', '-req', '-in', csr, '-CA', caFile, '-CAkey', caKeyFile, '-CAcreateserial', '-out', f.certFile, '-days', '3650', '-extfile', ext]);
  writeFileSync(f.keystoreFile, [readFileSync(f.keyFile, 'utf8'), readFileSync(f.certFile, 'utf8'), readFileSync(caFile, 'utf8')].join(''), { mode: 0o600 });
  rmSync(csr, { force: true });
  return f;
}
