/**
 * HTTPS for the gateway's server: the certificate and key are PEM files (`TLS_CERT_FILE`,
 * `TLS_KEY_FILE`), read at start and read again whenever either changes (polled every
 * `intervalMs`, which also sees a Kubernetes secret's symlink swap), then installed with
 * `server.setSecureContext` — new connections get the new certificate, open ones keep theirs, no
 * restart. A pair that does not load (half-written, key and certificate not matching) is logged
 * and the previous one stays in use, so a bad rotation never takes the gateway down.
 * Spec: issue 11 ("TLS for the HTTP server (certificate and key files, reloaded when they change)");
 *   Node `tls.Server#setSecureContext`.
 */
import { readFileSync } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import { GatewayError, errorMessage, readErrorCode } from '../core/errors.js';
import { watchFileShared } from '../core/watch-file.js';
import type { Logger } from '../observability/index.js';

export interface TlsFiles {
  /** PEM certificate chain, leaf first. */
  readonly certFile: string;
  /** PEM private key of the leaf certificate. */
  readonly keyFile: string;
}

/** How often the files are checked for changes, ms. */
export const TLS_RELOAD_INTERVAL_MS = 1000;

/**
 * Reads and checks a pair (the key must match the certificate).
 * Errors: CEG_INVALID_OPTIONS naming the variable of the file that failed (never its content).
 */
export function readTlsPair(files: TlsFiles): { cert: Buffer; key: Buffer } {
  let cert: Buffer;
  let key: Buffer;
  try {
    cert = readFileSync(files.certFile);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_CERT_FILE: cannot read ${files.certFile} (${readErrorCode(err)})`, { retriable: false, cause: err });
  }
  try {
    key = readFileSync(files.keyFile);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_KEY_FILE: cannot read ${files.keyFile} (${readErrorCode(err)})`, { retriable: false, cause: err });
  }
  try {
    createSecureContext({ cert, key }); // throws when the key does not match or a PEM is broken
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_CERT_FILE / TLS_KEY_FILE: not a matching PEM certificate and key (${errorMessage(err).slice(0, 120)})`, { retriable: false });
  }
  return { cert, key };
}

/**
 * Watches the pair and installs each new one on `server`; stops when the server closes. The files
 * are watched through {@link watchFileShared}: every server of the process on one certificate
 * shares one stat listener per file (each `watchFile` of its own added a listener to Node's one
 * StatWatcher of the path, and the eleventh gateway of a process warned MaxListenersExceeded).
 */
export function reloadOnChange(server: HttpsServer, files: TlsFiles, log: Logger, intervalMs: number = TLS_RELOAD_INTERVAL_MS): void {
  const reload = (): void => {
    try {
      server.setSecureContext(readTlsPair(files));
      log.info({ certFile: files.certFile }, 'tls: certificate and key reloaded');
    } catch (err) {
      log.error({ err: errorMessage(err) }, 'tls: the changed certificate or key does not load; the previous pair stays in use');
    }
  };
  const closed = new AbortController();
  server.once('close', () => closed.abort());
  watchFileShared(files.certFile, intervalMs, reload, closed.signal);
  // One file holding both (a combined PEM): watched once, reloaded once per change.
  if (files.keyFile !== files.certFile) watchFileShared(files.keyFile, intervalMs, reload, closed.signal);
}
