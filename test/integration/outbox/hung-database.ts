/**
 * A PostgreSQL that hangs for one client only, without touching the shared stack: the client
 * connects through a loopback TCP proxy that can freeze (it stops forwarding either way and holds
 * new connections unanswered, as a SIGSTOPped postmaster does), and the client's own backends
 * (found in pg_stat_activity by `application_name`) are SIGSTOPped meanwhile, as the break test
 * stopped every backend. Other sessions of the database go on.
 */
import { createConnection, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import type pg from 'pg';

export interface HungDatabase {
  /** The connection string to give the client: through the proxy, with `application_name`. */
  readonly url: string;
  /** Freezes the proxy and SIGSTOPs the client's backends; resolves with their pids. */
  freeze(): Promise<number[]>;
  /** SIGCONTs the stopped backends and lets the proxy forward again. Idempotent. */
  thaw(): void;
  close(): Promise<void>;
}

/** `admin`: a pool on the real database (not through the proxy), to find the backends. */
export async function hungDatabase(databaseUrl: string, applicationName: string, admin: pg.Pool): Promise<HungDatabase> {
  const upstream = new URL(databaseUrl);
  let frozen = false;
  let stopped: number[] = [];
  const pairs = new Set<{ client: Socket; server: Socket | undefined }>();
  const open = (pair: { client: Socket; server: Socket | undefined }): void => {
    const server = createConnection({ host: upstream.hostname, port: Number(upstream.port || 5432) });
    pair.server = server;
    pair.client.pipe(server);
    server.pipe(pair.client);
    server.on('error', () => pair.client.destroy());
    server.on('close', () => pair.client.destroy());
  };
  const proxy: Server = createServer((client) => {
    const pair = { client, server: undefined as Socket | undefined };
    pairs.add(pair);
    client.on('error', () => pair.server?.destroy());
    client.on('close', () => {
      pair.server?.destroy();
      pairs.delete(pair);
    });
    if (frozen) client.pause(); // a hung postmaster: the TCP connection is accepted, nothing answers
    else open(pair);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as { port: number }).port;
  const url = new URL(databaseUrl);
  url.host = `127.0.0.1:${port}`;
  url.searchParams.set('application_name', applicationName);
  const thaw = (): void => {
    for (const pid of stopped) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone already
      }
    }
    stopped = [];
    if (!frozen) return;
    frozen = false;
    for (const p of pairs) {
      if (p.server === undefined) {
        p.client.resume();
        open(p);
      } else {
        p.client.pipe(p.server);
        p.server.pipe(p.client);
        p.client.resume();
        p.server.resume();
      }
    }
  };
  return {
    url: url.toString(),
    async freeze() {
      const r = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [applicationName]);
      frozen = true;
      for (const p of pairs) {
        p.client.unpipe();
        p.server?.unpipe();
        p.client.pause();
        p.server?.pause();
      }
      stopped = r.rows.map((row) => row.pid);
      for (const pid of stopped) process.kill(pid, 'SIGSTOP');
      return stopped;
    },
    thaw,
    async close() {
      thaw();
      for (const p of pairs) {
        p.client.destroy();
        p.server?.destroy();
      }
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    },
  };
}
