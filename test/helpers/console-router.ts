/**
 * The console's router alone behind express on 127.0.0.1, every request the anonymous admin's
 * (as a gateway without PARTNERS_FILE), problems answered as the gateway does: for tests of the
 * live tail on the in-memory transport.
 */
import express from 'express';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { consoleRouter } from '../../src/http/console/router.js';
import type { PullSlots } from '../../src/http/api/subscriptions/pull-slots.js';
import { problemHandler } from '../../src/http/api/errors.js';
import { ANONYMOUS, Access, attachAccess } from '../../src/http/auth/index.js';
import { silentLogger } from '../../src/observability/index.js';

/** Listens on a free loopback port; `base` is its `http://127.0.0.1:<port>`. */
export async function listenConsoleRouter(deps: Parameters<typeof consoleRouter>[0], slots: PullSlots): Promise<{ readonly server: Server; readonly base: string }> {
  const app = express();
  app.use((req, _res, next) => {
    attachAccess(req, new Access(ANONYMOUS, silentLogger()));
    next();
  });
  app.use(consoleRouter(deps, slots));
  app.use(problemHandler({ retryAfterS: 1 }));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
