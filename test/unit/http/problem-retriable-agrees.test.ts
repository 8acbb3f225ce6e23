/**
 * A 503 says "try again later" (RFC 9110 §15.6.4): every problem+json answer's status, `retriable`
 * and `Retry-After` must agree, for every error code raised either way, on both answer paths (the
 * plain node:http one, `sendProblem`, and the API app's last error handler, `problemHandler`).
 * Before, a code whose row is 503 (CEG_BROKER_UNAVAILABLE from a broker refusal the transport could
 * not place, as two replays under load got; CEG_SECRETS_KEY_MISSING always) was answered 503 with
 * `retriable: false` and no `Retry-After`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, GatewayError } from '../../../src/core/errors.js';
import type { ErrorCode } from '../../../src/core/errors.js';
import { problemHandler } from '../../../src/http/api/errors.js';
import { sendProblem } from '../../../src/http/respond.js';

const cases = errorCodes.flatMap((code) => [true, false].map((retriable) => ({ code, retriable })));
const errorOf = (code: ErrorCode, retriable: boolean): GatewayError => new GatewayError(code, 'm', { retriable });

let plainUrl = '';
let apiUrl = '';
const closers: (() => Promise<void>)[] = [];

/** `/<code>/<retriable>` throws that error. */
const parse = (url: string): { code: ErrorCode; retriable: boolean } => {
  const [, code, retriable] = url.split('/');
  return { code: code as ErrorCode, retriable: retriable === 'true' };
};

beforeAll(async () => {
  const plain = createServer((req, res) => {
    const { code, retriable } = parse(req.url ?? '/');
    sendProblem(res, errorOf(code, retriable), { retryAfterS: 7 });
  });
  const app = express();
  app.get('/:code/:retriable', (req) => {
    const { code, retriable } = parse(req.originalUrl);
    throw errorOf(code, retriable);
  });
  app.use(problemHandler({ retryAfterS: 7 }));
  const api = createServer(app);
  for (const [server, set] of [[plain, (u: string) => (plainUrl = u)], [api, (u: string) => (apiUrl = u)]] as const) {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    set(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  }
});

afterAll(async () => {
  await Promise.all(closers.map((c) => c()));
});

describe.each([['sendProblem', () => plainUrl], ['problemHandler', () => apiUrl]] as const)('status, retriable and Retry-After agree (%s)', (_path, base) => {
  it.each(cases.map((c) => [c.code, c.retriable]))('%s raised with retriable %s', async (code, retriable) => {
    const res = await fetch(`${base()}/${code}/${String(retriable)}`);
    const body = (await res.json()) as { status: number; retriable: boolean; code: string };
    expect(body).toMatchObject({ status: res.status, retriable, code });
    if (retriable) {
      // Retriable: 503 "try again later", or 429 when the fault is the client's pace; both say when.
      expect([429, 503]).toContain(res.status);
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    } else {
      expect(res.status).not.toBe(503);
      expect(res.headers.get('retry-after')).toBeNull();
    }
  });
});
