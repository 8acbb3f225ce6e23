/**
 * An SSE stream whose client goes away while the stream waits for 'drain' (the client stopped
 * reading, its socket backed up, then it hung up) ends: its handler finishes the response and
 * stops its heartbeat timer. It used to write the next event of the answer to the destroyed
 * response and wait for a 'close' that had already passed, so the handler, its heartbeat timer
 * (re-armed every `heartbeat` seconds), the response, its socket object and the pull session
 * stayed for the life of the process: one leak per client that hung up mid-answer (found by
 * churning SSE clients against a long-running gateway: 6 such streams after 200 churn rounds).
 * On the router alone, with a pull whose answers are large enough to back the socket up.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Server, ServerResponse } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { pullRouter } from '../../src/http/api/subscriptions/pull-routes.js';
import type { PullApi } from '../../src/http/api/subscriptions/pull-routes.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { Access, attachAccess } from '../../src/http/auth/index.js';
import type { Partner } from '../../src/http/auth/index.js';
import { createLogger } from '../../src/observability/index.js';

/** One event's text: 256 KiB, so one answer of 100 (PULL_DEFAULTS.streamBatch) is 25 MiB, more than loopback socket buffers hold. */
const TEXT = JSON.stringify({ specversion: '1.0', id: 'e', source: 'urn:test', type: 't', data: 'x'.repeat(256 * 1024) });

describe('an SSE stream whose client hangs up while the stream waits for drain', () => {
  let server: Server;
  let port: number;
  const partner: Partner = { id: 'acme', keyHashes: [], sources: [], publish: { all: true, eventIds: new Set() }, subscribe: { all: true, eventIds: new Set() }, permissions: new Set(), roles: new Set(), limits: {} };
  const responses: ServerResponse[] = [];
  let answers = 0;
  /** Every answer is 100 large events, at once. */
  const api: PullApi = {
    open: () =>
      Promise.resolve({
        next: () => {
          answers++;
          return Promise.resolve({ events: Array.from({ length: 100 }, (_, i) => ({ json: {}, text: TEXT, cursor: `c1.${answers}.${i}` })), cursor: `c1.${answers}.end` });
        },
      }),
    commit: () => Promise.resolve(),
  };

  beforeAll(async () => {
    const app = express();
    const log = createLogger({ level: 'silent' });
    app.use((req, res, next) => {
      responses.push(res);
      attachAccess(req, new Access(partner, log));
      next();
    });
    app.use(pullRouter(() => api));
    app.use(problemHandler({ retryAfterS: 1 }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((ok) => server.once('listening', ok));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  });

  it('ends the response (the handler finished, no heartbeat left) and reads no further answer', async () => {
    const client = net.connect(port, '127.0.0.1');
    client.on('error', () => {});
    await new Promise((ok) => client.once('connect', ok));
    client.write('GET /subscriptions/s/stream?heartbeat=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    // The headers and the first events arrive, then the client reads no more.
    await new Promise((ok) => client.once('data', ok));
    client.pause();
    const res = responses.at(-1)!;
    // The stream is waiting for 'drain' in the middle of its first answer.
    await vi.waitFor(() => expect(res.writableNeedDrain).toBe(true), { timeout: 10_000, interval: 20 });
    client.destroy();
    await vi.waitFor(() => expect(res.destroyed).toBe(true), { timeout: 5_000, interval: 20 });
    // The handler's `finally` ran (res.end()): before the fix it waited forever, the heartbeat timer re-armed every second.
    await vi.waitFor(() => expect(res.writableEnded).toBe(true), { timeout: 5_000, interval: 20 });
    expect(answers).toBe(1);
  });
});
