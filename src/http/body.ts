/**
 * Reads a request body up to a bound, without buffering more than the bound (bytes), within a
 * deadline, decoding its content coding.
 * Spec: RFC 9110 §8.4 (Content-Encoding), §15.5.16 (415 for an unsupported content coding, with
 * Accept-Encoding), §10.1.1 (Expect: 100-continue); RFC 9112 §6.1 (transfer codings: only chunked
 * is implemented here, others 501).
 */
import type { IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import { GatewayError } from '../core/errors.js';

const gunzipAsync = promisify(gunzip);

/** Content codings the gateway decodes (besides `identity`). */
export const ACCEPTED_ENCODINGS = ['gzip'] as const;

/** The error for a body over `maxBytes`. Code CEG_PAYLOAD_TOO_LARGE, retriable false, details `{ field: 'body', maxBytes }`. */
export function bodyTooLarge(maxBytes: number, what = 'request body'): GatewayError {
  return new GatewayError('CEG_PAYLOAD_TOO_LARGE', `${what} exceeds ${maxBytes} bytes`, { retriable: false, details: { field: 'body', maxBytes } });
}

/**
 * Refuses what the body cannot be read as, before reading it: a transfer coding other than
 * `chunked` (501 CEG_NOT_IMPLEMENTED), a content coding other than `identity` or `gzip` (415
 * CEG_UNSUPPORTED_MEDIA_TYPE naming it and those accepted), a declared Content-Length over
 * `maxBytes` (413). Returns the content coding to decode (`gzip`) or undefined.
 */
export function checkBodyFraming(req: IncomingMessage, maxBytes: number): 'gzip' | undefined {
  const te = req.headers['transfer-encoding'];
  if (te !== undefined && te.trim().toLowerCase() !== 'chunked') {
    throw new GatewayError('CEG_NOT_IMPLEMENTED', `transfer coding "${te.slice(0, 100)}" is not implemented: send the body as is (Content-Length) or chunked`, {
      retriable: false,
      details: { field: 'headers', transferEncoding: te.slice(0, 100), supported: ['chunked'] },
    });
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw bodyTooLarge(maxBytes);
  const ce = req.headers['content-encoding']?.trim().toLowerCase();
  if (ce === undefined || ce === '' || ce === 'identity') return undefined;
  if (ce === 'gzip' || ce === 'x-gzip') return 'gzip';
  throw new GatewayError('CEG_UNSUPPORTED_MEDIA_TYPE', `content coding "${ce.slice(0, 100)}" is not supported; send the body as is or gzip-encoded`, {
    retriable: false,
    details: { field: 'headers', contentEncoding: ce.slice(0, 100), supported: ['identity', ...ACCEPTED_ENCODINGS] },
  });
}

/**
 * Resolves the whole body as one Buffer, decoded when `encoding` is `gzip` (at most `maxBytes`
 * after decoding too, so a small bomb cannot expand without bound).
 * `timeoutMs`: time left to receive the body.
 * Errors: CEG_PAYLOAD_TOO_LARGE (retriable: false) as soon as more than `maxBytes` arrive (the
 *   rest is not kept); CEG_REQUEST_TIMEOUT (retriable: false, 408) when the body is not complete
 *   in time; CEG_INVALID_EVENT naming the `body` when it is not valid gzip; a client that aborts
 *   rejects with its socket error (code ECONNRESET or 'aborted'); CEG_CLOSED (retriable: true,
 *   503) when `signal` aborts first — the gateway's shutdown past its grace period (issue 15): the
 *   client is told to send the request elsewhere instead of having its connection cut unanswered.
 */
export function readBody(req: IncomingMessage, maxBytes: number, opts: { readonly timeoutMs?: number; readonly encoding?: 'gzip'; readonly signal?: AbortSignal } = {}): Promise<Buffer> {
  const raw = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    const signal = opts.signal;
    const onShutdown = (): void => {
      settle();
      reject(new GatewayError('CEG_CLOSED', 'the gateway is shutting down and the request body had not arrived whole: send the request to another instance', { retriable: true, details: { field: 'body' } }));
    };
    const settle = (): void => {
      clearTimeout(timer);
      req.off('data', onData);
      signal?.removeEventListener('abort', onShutdown);
    };
    if (signal?.aborted === true) {
      onShutdown();
      return;
    }
    signal?.addEventListener('abort', onShutdown, { once: true });
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        settle();
        req.resume();
        reject(bodyTooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    if (opts.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        settle();
        reject(new GatewayError('CEG_REQUEST_TIMEOUT', `the request body did not arrive within ${opts.timeoutMs} ms`, { retriable: false, details: { field: 'body' } }));
      }, Math.max(0, opts.timeoutMs));
    }
    req.on('data', onData);
    req.once('end', () => {
      settle();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.once('aborted', () => {
      settle();
      reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    });
    req.once('error', (err) => {
      settle();
      reject(err);
    });
  });
  if (opts.encoding !== 'gzip') return raw;
  return raw.then((compressed) =>
    gunzipAsync(compressed, { maxOutputLength: maxBytes }).catch((err: unknown) => {
      if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw bodyTooLarge(maxBytes, 'the decoded (gunzipped) request body');
      throw new GatewayError('CEG_INVALID_EVENT', 'the body is declared Content-Encoding: gzip but is not valid gzip', { retriable: false, details: { field: 'body' } });
    }),
  );
}
