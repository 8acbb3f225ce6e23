/**
 * Raw HTTP/1.1 over a TCP socket, for what fetch cannot send or hides: pipelined requests, repeated
 * headers, malformed requests, absolute-form targets, CONNECT, Expect: 100-continue, slow bodies.
 * Only to loopback.
 */
import { createServer } from 'node:http';
import type { RequestListener } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  /** Lower-case names; repeated ones joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** performance.now() when the response was complete. */
  readonly atMs: number;
}

/** Splits the bytes of a connection into the responses they hold (interim 1xx included). */
export function parseResponses(data: Buffer, times: number[] = []): RawResponse[] {
  const out: RawResponse[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) break;
    const head = data.subarray(at, end).toString('latin1').split('\r\n');
    const status = Number(head[0]!.split(' ')[1]);
    const headers: Record<string, string> = {};
    for (const line of head.slice(1)) {
      const c = line.indexOf(':');
      const name = line.slice(0, c).trim().toLowerCase();
      const value = line.slice(c + 1).trim();
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    }
    const length = status >= 100 && status < 200 ? 0 : Number(headers['content-length'] ?? 0);
    const body = data.subarray(end + 4, end + 4 + length).toString('utf8');
    out.push({ status, headers, body, atMs: times[out.length] ?? performance.now() });
    at = end + 4 + length;
  }
  return out;
}

/** An open connection: write pieces, read what came so far, wait for the server to close. */
export interface RawConnection {
  readonly socket: Socket;
  write(data: string | Buffer): void;
  /** Everything received so far. */
  received(): Buffer;
  /** Resolves when the server closed the connection (or after `timeoutMs`, with `closed: false`). */
  closed(timeoutMs: number): Promise<{ closed: boolean; responses: RawResponse[] }>;
  /** Resolves once `n` complete responses are in (or after `timeoutMs`). */
  responses(n: number, timeoutMs: number): Promise<RawResponse[]>;
  destroy(): void;
}

export async function openRaw(url: string): Promise<RawConnection> {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  const chunks: Buffer[] = [];
  let isClosed = false;
  const listeners = new Set<() => void>();
  socket.on('data', (d: Buffer) => {
    chunks.push(d);
    for (const l of listeners) l();
  });
  socket.on('close', () => {
    isClosed = true;
    for (const l of listeners) l();
  });
  const received = (): Buffer => Buffer.concat(chunks);
  const until = (done: () => boolean, timeoutMs: number): Promise<void> =>
    new Promise((resolve) => {
      if (done()) return resolve();
      const timer = setTimeout(finish, timeoutMs);
      function finish(): void {
        clearTimeout(timer);
        listeners.delete(check);
        resolve();
      }
      function check(): void {
        if (done()) finish();
      }
      listeners.add(check);
    });
  return {
    socket,
    write: (data) => void socket.write(data),
    received,
    async closed(timeoutMs) {
      await until(() => isClosed, timeoutMs);
      return { closed: isClosed, responses: parseResponses(received()) };
    },
    async responses(n, timeoutMs) {
      await until(() => isClosed || parseResponses(received()).length >= n, timeoutMs);
      return parseResponses(received());
    },
    destroy: () => socket.destroy(),
  };
}

/**
 * Sends `raw` on a new connection and returns the responses received once `n` final (non-1xx)
 * responses are in, the server closed the connection, or `timeoutMs` passed.
 */
export async function rawRequest(url: string, raw: string | Buffer, timeoutMs = 5000, n = 1): Promise<RawResponse[]> {
  const c = await openRaw(url);
  c.write(raw);
  const deadline = performance.now() + timeoutMs;
  let responses = await c.responses(n, timeoutMs);
  while (responses.filter((r) => r.status >= 200).length < n && performance.now() < deadline && !c.socket.destroyed && c.socket.readable) {
    responses = await c.responses(responses.length + 1, deadline - performance.now());
  }
  c.destroy();
  return responses;
}

/** A POST /events request as raw text, with Content-Length computed; `headers` in order, repeats allowed. */
export function rawPost(headers: readonly (readonly [string, string])[], body: string | Buffer, target = '/events', host = '127.0.0.1'): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const head = [`POST ${target} HTTP/1.1`, `Host: ${host}`, ...headers.map(([k, v]) => `${k}: ${v}`), `Content-Length: ${b.length}`].join('\r\n');
  return Buffer.concat([Buffer.from(`${head}\r\n\r\n`, 'latin1'), b]);
}

/** A server on a free loopback port for clients that stop reading (send-stall tests). */
export interface StuckClientServer {
  readonly port: number;
  /** Sends `GET path` on a raw socket paused before anything arrives: it never reads the answer (destroyed by `close()`). */
  stuckClient(path: string): Promise<Socket>;
  /** Destroys the clients' sockets, then closes the server and its connections. */
  close(): Promise<void>;
}

/**
 * `app` (an express app or any request listener) listening on 127.0.0.1, a free port, with raw
 * clients that send a request and never read: TCP keeps such a connection alive with a zero window,
 * so the server's writes back up and no error ever comes (a hung consumer process or browser).
 */
export async function stuckClientServer(app: RequestListener): Promise<StuckClientServer> {
  const server = createServer(app);
  server.listen(0, '127.0.0.1');
  await new Promise<void>((r) => server.once('listening', () => r()));
  const port = (server.address() as AddressInfo).port;
  const sockets: Socket[] = [];
  return {
    port,
    async stuckClient(path) {
      const s = connect(port, '127.0.0.1');
      sockets.push(s);
      s.pause();
      s.on('error', () => undefined);
      await new Promise<void>((r) => s.once('connect', () => r()));
      s.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
      return s;
    },
    async close() {
      for (const s of sockets) s.destroy();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
