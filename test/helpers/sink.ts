/**
 * A real webhook sink for tests: a node:http server on 127.0.0.1 (an ephemeral port) that records
 * every request and answers as the test says. By default it accepts the CloudEvents validation
 * handshake (echoing the origin) and answers 200 to every delivery. Loopback only.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SinkRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  /** performance.now() when the request was complete. */
  readonly atMs: number;
  /** Which TCP connection it came on (1, 2, …): requests of one gateway process share its connections. */
  readonly conn: number;
}

export interface SinkAnswer {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
}

export type Responder = (req: SinkRequest, nth: number) => SinkAnswer | Promise<SinkAnswer>;

export const acceptAll: Responder = (req) =>
  req.method === 'OPTIONS' ? { status: 200, headers: { 'webhook-allowed-origin': String(req.headers['webhook-request-origin'] ?? '*') } } : { status: 200 };

export interface TestSink {
  readonly url: string;
  readonly requests: SinkRequest[];
  /** POST requests only (deliveries). */
  deliveries(): SinkRequest[];
  /** performance.now() when each connection closed (a killed gateway's connections close with it). */
  readonly closedAt: ReadonlyMap<number, number>;
  respond(r: Responder): void;
  close(): Promise<void>;
}

export async function startSink(responder: Responder = acceptAll, path = '/hook'): Promise<TestSink> {
  let respond = responder;
  const requests: SinkRequest[] = [];
  let posts = 0;
  let conns = 0;
  const connOf = new WeakMap<object, number>();
  const closedAt = new Map<number, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: SinkRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), atMs: performance.now(), conn: connOf.get(req.socket) ?? 0 };
      requests.push(r);
      const nth = req.method === 'POST' ? ++posts : 0;
      Promise.resolve(respond(r, nth)).then(
        (a) => {
          res.writeHead(a.status, a.headers ?? {});
          res.end(a.body ?? '');
        },
        () => {
          res.writeHead(500);
          res.end('responder failed');
        },
      );
    });
  });
  server.on('connection', (socket) => {
    const id = ++conns;
    connOf.set(socket, id);
    socket.once('close', () => closedAt.set(id, performance.now()));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    deliveries: () => requests.filter((r) => r.method === 'POST'),
    closedAt,
    respond: (r) => void (respond = r),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
