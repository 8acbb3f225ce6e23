/**
 * HTTPS for the gateway's server: the certificate and key are PEM files (`TLS_CERT_FILE`,
 * `TLS_KEY_FILE`), read at start and read again whenever either changes from what was read
 * (polled every `intervalMs`, which also sees a Kubernetes secret's symlink swap and an edit landing
 * right after the first read), then installed with `server.setSecureContext` — new connections get
 * the new certificate, open ones keep theirs, no restart. A pair that does not load (half-written,
 * key and certificate not matching) is logged and the previous one stays in use, so a bad rotation
 * never takes the gateway down.
 * Spec: issue 11 ("TLS for the HTTP server (certificate and key files, reloaded when they change)");
 *   Node `tls.Server#setSecureContext`.
 */
import type { Stats } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import { GatewayError, errorMessage, readErrorCode } from '../core/errors.js';
import { readWatchedFile, watchFileShared } from '../core/watch-file.js';
import type { WatchedFileRead } from '../core/watch-file.js';
import type { Logger } from '../observability/index.js';

export interface TlsFiles {
  /** PEM certificate chain, leaf first. */
  readonly certFile: string;
  /** PEM private key of the leaf certificate. */
  readonly keyFile: string;
}

/** How often the files are checked for changes, ms. */
export const TLS_RELOAD_INTERVAL_MS = 1000;

/** A pair as read: the PEM bytes, and each file's stats taken just before it was read. */
export interface LoadedTlsPair {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** Where {@link reloadOnChange} starts from: an edit after the read is a change. */
  readonly stats: { readonly cert: Stats; readonly key: Stats };
}

/**
 * Reads and checks a pair (the key must match the certificate).
 * Errors: CEG_INVALID_OPTIONS naming the variable of the file that failed (never its content).
 */
export function readTlsPair(files: TlsFiles): LoadedTlsPair {
  let cert: WatchedFileRead;
  let key: WatchedFileRead;
  try {
    cert = readWatchedFile(files.certFile);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_CERT_FILE: cannot read ${files.certFile} (${readErrorCode(err)})`, { retriable: false, cause: err });
  }
  try {
    key = readWatchedFile(files.keyFile);
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_KEY_FILE: cannot read ${files.keyFile} (${readErrorCode(err)})`, { retriable: false, cause: err });
  }
  try {
    createSecureContext({ cert: cert.data, key: key.data }); // throws when the key does not match or a PEM is broken
  } catch (err) {
    throw new GatewayError('CEG_INVALID_OPTIONS', `TLS_CERT_FILE / TLS_KEY_FILE: not a matching PEM certificate and key (${errorMessage(err).slice(0, 120)})`, { retriable: false });
  }
  return { cert: cert.data, key: key.data, stats: { cert: cert.stats, key: key.stats } };
}

/**
 * Watches the pair and installs each new one on `server`; stops when the server closes. `loaded`:
 * the stats {@link readTlsPair} took when it read the pair the server started with, so a rotation
 * landing right after that read (before the first look) is installed too. The files are watched
 * through {@link watchFileShared}: every server of the process on one certificate shares one poll
 * per file (each `watchFile` of its own added a listener to Node's one StatWatcher of the path, and
 * the eleventh gateway of a process warned MaxListenersExceeded).
 */
export function reloadOnChange(server: HttpsServer, files: TlsFiles, loaded: LoadedTlsPair['stats'], log: Logger, intervalMs: number = TLS_RELOAD_INTERVAL_MS): void {
  const reload = (): void => {
    try {
      const { cert, key } = readTlsPair(files);
      server.setSecureContext({ cert, key });
      log.info({ certFile: files.certFile }, 'tls: certificate and key reloaded');
    } catch (err) {
      log.error({ err: errorMessage(err) }, 'tls: the changed certificate or key does not load; the previous pair stays in use');
    }
  };
  const closed = new AbortController();
  server.once('close', () => closed.abort());
  watchFileShared(files.certFile, loaded.cert, intervalMs, reload, closed.signal);
  // One file holding both (a combined PEM): watched once, reloaded once per change.
  if (files.keyFile !== files.certFile) watchFileShared(files.keyFile, loaded.key, intervalMs, reload, closed.signal);
}
