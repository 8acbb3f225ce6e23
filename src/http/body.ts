/** Reads a request body up to a bound, without buffering more than the bound (bytes). */
import type { IncomingMessage } from 'node:http';
import { GatewayError } from '../core/errors.js';

/**
 * Resolves the whole body as one Buffer.
 * Errors: CEG_PAYLOAD_TOO_LARGE (retriable: false) as soon as more than `maxBytes` arrive or the
 *   declared Content-Length exceeds it (the rest is not read).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        req.off('data', onData);
        req.resume();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

function tooLarge(maxBytes: number): GatewayError {
  return new GatewayError('CEG_PAYLOAD_TOO_LARGE', `request body exceeds ${maxBytes} bytes`, { retriable: false, details: { field: 'body', maxBytes } });
}
