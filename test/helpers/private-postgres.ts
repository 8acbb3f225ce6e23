/**
 * A PostgreSQL server of one test's own (never the shared stack's): fault tests restart and stop it
 * without disturbing anyone else. The machine's PostgreSQL binaries (as scripts/stack/postgres.ts),
 * a data directory under the temporary folder, one free loopback port, `trust` authentication
 * (loopback only, a throw-away server). As root every server command runs as the `postgres` user
 * (PostgreSQL refuses to run as root). A start that fails throws: a test never skips silently.
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);
const SERVICE_USER = 'postgres';

/** The machine's PostgreSQL binaries: PG_BIN, else the newest /usr/lib/postgresql/<v>/bin. */
function pgBin(): string {
  const fromEnv = process.env.PG_BIN;
  if (fromEnv) return fromEnv;
  for (const v of ['17', '16', '15', '14', '13']) {
    const dir = `/usr/lib/postgresql/${v}/bin`;
    if (existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  throw new Error('private PostgreSQL: no pg_ctl in /usr/lib/postgresql/<version>/bin (install postgresql or set PG_BIN)');
}

export interface PrivatePostgres {
  /** postgres:// URL of its `postgres` database (user `postgres`, no password). */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl restart -m <mode>` (fast: sessions ended cleanly; immediate: a crash, recovery at start). */
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  /** `pg_ctl stop -m fast`: the port refuses connections until {@link start}. */
  halt(): Promise<void>;
  /** Starts it again on the same data directory and port. */
  start(): Promise<void>;
  /** Stops it (immediate) and removes its data directory. Idempotent, never throws. */
  stop(): Promise<void>;
}

/** Starts a private PostgreSQL (a few seconds). */
export async function startPrivatePostgres(prefix: string): Promise<PrivatePostgres> {
  const bin = pgBin();
  const root = process.getuid?.() === 0;
  const home = mkdtempSync(join(tmpdir(), `ceg-pg-${prefix}-`));
  const data = join(home, 'data');
  const log = join(home, 'postgres.log');
  const port = await freePort();
  chmodSync(home, 0o755);
  if (root) {
    const uid = Number((await run('id', ['-u', SERVICE_USER])).stdout.trim());
    const gid = Number((await run('id', ['-g', SERVICE_USER])).stdout.trim());
    chownSync(home, uid, gid);
  }
  const as = async (cmd: string, args: readonly string[]): Promise<void> => {
    await (root ? run('runuser', ['-u', SERVICE_USER, '--', join(bin, cmd), ...args]) : run(join(bin, cmd), [...args]));
  };
  const opts = `-p ${port} -c listen_addresses=127.0.0.1 -k ${home} -c max_connections=100 -c fsync=off -c shared_buffers=32MB`;
  const logTail = (): string => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '');
  const ctl = async (args: readonly string[]): Promise<void> => {
    try {
      await as('pg_ctl', ['-D', data, '-l', log, '-o', opts, '-w', '-t', '60', ...args]);
    } catch (err) {
      throw new Error(`private PostgreSQL ${prefix}: pg_ctl ${args.join(' ')} failed: ${(err as Error).message}\n${logTail()}`);
    }
  };
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(home, { recursive: true, force: true });
  };
  try {
    await as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
    await ctl(['start']);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    restart: (mode) => ctl(['-m', mode, 'restart']),
    halt: () => ctl(['-m', 'fast', 'stop']),
    start: () => ctl(['start']),
    stop,
  };
}
