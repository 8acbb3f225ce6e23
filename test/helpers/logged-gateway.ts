/**
 * A gateway (not listening yet) from these variables on loopback with a free port, logging at
 * debug into memory: tests read its log lines (`logs()`), e.g. to check that a secret never
 * appears in them.
 */
import { PassThrough } from 'node:stream';
import { expect } from 'vitest';
import { createGateway } from '../../src/app/index.js';
import type { Gateway } from '../../src/app/index.js';
import { loadConfig } from '../../src/config/index.js';
import { isGatewayError } from '../../src/core/errors.js';
import type { GatewayError } from '../../src/core/errors.js';
import { createLogger } from '../../src/observability/index.js';

export function gatewayWithLogs(vars: Record<string, string>): { gw: Gateway; logs: () => string } {
  const lines: string[] = [];
  const out = new PassThrough();
  out.on('data', (c: Buffer) => lines.push(c.toString('utf8')));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'debug', ...vars });
  return { gw: createGateway(config, createLogger({ level: 'debug', destination: out })), logs: () => lines.join('') };
}

/**
 * Awaits the gateway's start-up, which must fail for good: the GatewayError it failed with,
 * asserted not retriable (a configuration problem the gateway does not wait out).
 */
export async function startUpFailure(gw: Gateway): Promise<GatewayError> {
  const err: unknown = await gw.ready.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isGatewayError(err)) throw new Error(`start-up should fail with a GatewayError, got ${String(err)}`);
  expect(err.retriable, err.message).toBe(false);
  return err;
}

/** What a refused server certificate says (core/tls-errors), for a CA that did not sign it. */
export const UNTRUSTED_CERTIFICATE = /TLS certificate not trusted \((SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/;
