/**
 * Size bounds of HTTP ingress. The server checks `maxBodyBytes` while it reads; these build the
 * error it throws so every path answers the same way (413).
 */
import { GatewayError } from '../../core/errors.js';

/**
 * The error for a body over `maxBodyBytes` (bytes). `receivedBytes`, when known, is reported.
 * Code CEG_PAYLOAD_TOO_LARGE, retriable false, details `{ field: 'body', maxBytes, receivedBytes? }`.
 */
export function payloadTooLarge(maxBodyBytes: number, receivedBytes?: number): GatewayError {
  const details: Record<string, unknown> = { field: 'body', maxBytes: maxBodyBytes };
  if (receivedBytes !== undefined) details.receivedBytes = receivedBytes;
  return new GatewayError('CEG_PAYLOAD_TOO_LARGE', `request body exceeds ${maxBodyBytes} bytes`, { retriable: false, details });
}

/** Throws {@link payloadTooLarge} when `sizeBytes` > `maxBodyBytes`. */
export function assertBodySize(sizeBytes: number, maxBodyBytes: number): void {
  if (sizeBytes > maxBodyBytes) throw payloadTooLarge(maxBodyBytes, sizeBytes);
}

/**
 * The error for a batch of more than `maxBatchEvents` events.
 * Code CEG_PAYLOAD_TOO_LARGE, retriable false, details `{ field: 'body', maxBatchEvents, events }`.
 */
export function batchTooLarge(maxBatchEvents: number, events: number): GatewayError {
  return new GatewayError('CEG_PAYLOAD_TOO_LARGE', `batch holds ${events} events; at most ${maxBatchEvents} are accepted per request`, {
    retriable: false,
    details: { field: 'body', maxBatchEvents, events },
  });
}
