/**
 * PostgreSQL from the machine's packages, on loopback, with a generated password (scram-sha-256).
 * PostgreSQL refuses to run as root, so as root every server command runs as the `postgres` user.
 */
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import pg from 'pg';
import type { StackConfig } from './config.js';
import type { Tools } from './preflight.js';
import { execFileAsync } from './process.js';

const SERVICE_USER = 'postgres';

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

async function serviceIds(): Promise<{ uid: number; gid: number }> {
  try {
    const uid = Number((await execFileAsync('id', ['-u', SERVICE_USER])).stdout.trim());
    const gid = Number((await execFileAsync('id', ['-g', SERVICE_USER])).stdout.trim());
    return { uid, gid };
  } catch {
    throw new Error(`Running as root needs an unprivileged "${SERVICE_USER}" user for PostgreSQL: install postgresql (it creates one) or run as a normal user.`);
  }
}

async function asServiceUser(cmd: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return isRoot() ? execFileAsync('runuser', ['-u', SERVICE_USER, '--', cmd, ...args]) : execFileAsync(cmd, [...args]);
}

function paths(cfg: StackConfig): { home: string; data: string; log: string; password: string } {
  const home = dirname(cfg.postgres.dataDir);
  return { home, data: cfg.postgres.dataDir, log: join(home, 'postgres.log'), password: join(home, 'password') };
}

export function databaseUrl(cfg: StackConfig, database: string): string {
  const password = readFileSync(paths(cfg).password, 'utf8').trim();
  return `postgres://${cfg.postgres.user}:${encodeURIComponent(password)}@127.0.0.1:${cfg.postgres.port}/${database}`;
}

async function initIfNeeded(cfg: StackConfig, tools: Tools): Promise<void> {
  const p = paths(cfg);
  if (existsSync(join(p.data, 'PG_VERSION'))) return;
  // The service user must be able to pass through the parent folder.
  mkdirSync(dirname(p.home), { recursive: true, mode: 0o755 });
  mkdirSync(p.home, { recursive: true, mode: 0o700 });
  const password = randomBytes(18).toString('base64url');
  writeFileSync(p.password, `${password}\n`, { mode: 0o600 });
  const pwfile = join(p.home, 'initdb-pw');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (isRoot()) {
    const { uid, gid } = await serviceIds();
    chownSync(p.home, uid, gid);
    chownSync(pwfile, uid, gid);
  }
  try {
    await asServiceUser(join(tools.pgBin, 'initdb'), ['-D', p.data, '-U', cfg.postgres.user, '--auth=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--locale=C']);
  } finally {
    rmSync(pwfile, { force: true });
  }
}

export async function postgresRunning(cfg: StackConfig, tools: Tools): Promise<boolean> {
  if (!existsSync(join(paths(cfg).data, 'PG_VERSION'))) return false;
  try {
    await asServiceUser(join(tools.pgBin, 'pg_ctl'), ['-D', paths(cfg).data, 'status']);
    return true;
  } catch {
    return false;
  }
}

export async function startPostgres(cfg: StackConfig, tools: Tools): Promise<void> {
  await initIfNeeded(cfg, tools);
  const p = paths(cfg);
  if (!(await postgresRunning(cfg, tools))) {
    const opts = `-p ${cfg.postgres.port} -c listen_addresses=127.0.0.1 -k ${p.home} -c max_connections=200 -c fsync=on`;
    try {
      await asServiceUser(join(tools.pgBin, 'pg_ctl'), ['-D', p.data, '-l', p.log, '-o', opts, '-w', '-t', '60', 'start']);
    } catch (err) {
      const log = existsSync(p.log) ? readFileSync(p.log, 'utf8').split('\n').slice(-10).join('\n') : '';
      throw new Error(`PostgreSQL did not start: ${(err as Error).message}\n${log}`);
    }
  }
  await ensureDatabases(cfg, ['registry', 'cegw']);
}

async function ensureDatabases(cfg: StackConfig, names: readonly string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl(cfg, 'postgres') });
  await client.connect();
  try {
    for (const name of names) {
      const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
      if (rowCount === 0) await client.query(`CREATE DATABASE "${name}"`);
    }
  } finally {
    await client.end();
  }
}

export async function stopPostgres(cfg: StackConfig, tools: Tools): Promise<void> {
  if (!(await postgresRunning(cfg, tools))) return;
  await asServiceUser(join(tools.pgBin, 'pg_ctl'), ['-D', paths(cfg).data, '-m', 'fast', '-w', 'stop']);
}
