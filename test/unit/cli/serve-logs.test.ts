/**
 * docs/deploy.md: `ce-gateway serve` writes its pino JSON lines to stderr; stdout stays free for
 * command output. Run as a process on the in-memory adapters. A CONNECTORS_DIR from which it starts
 * nothing is said (docs/connectors.md), once also with GATEWAY_WORKERS > 1.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers/wait.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';


describe('ce-gateway serve logs', { timeout: 60_000 }, () => {
  it('go to stderr as JSON lines; stdout stays empty', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1' };
    for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CONNECTORS_DIR', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[name];
    const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      await waitFor('the listening line on stderr', () => stderr.includes('"msg":"listening"'), 45_000);
    } finally {
      child.kill('SIGTERM');
    }
    // (The exit code is not the point here: a SIGTERM may land before serve installs its handler.)
    await exited;
    expect(stdout).toBe('');
    const lines = stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) expect(() => JSON.parse(l) as unknown, l).not.toThrow();
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toContain('listening');
  });
});

describe('ce-gateway serve stopped before it was ready', { timeout: 60_000 }, () => {
  it('SIGTERM while the registry cannot be reached is a shutdown (exit 0, "stopped"), not a start-up failure (exit 2, "cannot start")', async () => {
    // A loopback port nothing listens on: the bootstrap waits the registry out, never ready.
    const closed = await new Promise<number>((ok) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => ok(port));
      });
    });
    const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1', SCHEMA_REGISTRY_URL: `http://127.0.0.1:${closed}/apis/ccompat/v7`, SHUTDOWN_TIMEOUT_MS: '5000' };
    for (const name of ['KAFKA_BROKERS', 'DATABASE_URL', 'CONNECTORS_DIR', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[name];
    const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      // Listening, and at least one bootstrap attempt failed: the signal handler is installed and the gateway is not ready.
      await waitFor('listening and a failed bootstrap', () => stderr.includes('"msg":"listening"') && stderr.includes('bootstrap failed'), 45_000);
    } catch (err) {
      child.kill('SIGKILL');
      throw err;
    }
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).not.toContain('cannot start');
    expect(stderr).toContain('"msg":"stopped"');
  });
});

describe('ce-gateway serve with a CONNECTORS_DIR that holds only sub-folders', { timeout: 60_000 }, () => {
  it('says it starts no connector from it and names the sub-folders that hold connector files (it said nothing)', async () => {
    // The repository's connectors/ has its examples one level down: the folder a new user points at.
    const dir = mkdtempSync(join(tmpdir(), 'cegw-connectors-'));
    try {
      mkdirSync(join(dir, 'examples'));
      writeFileSync(join(dir, 'examples', 'hook.yaml'), 'kind: shell-hook\n');
      mkdirSync(join(dir, 'empty'));
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', PORT: '0', HOST: '127.0.0.1', CONNECTORS_DIR: dir };
      for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE']) delete env[name];
      const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      try {
        await waitFor('the connectors warning on stderr', () => stderr.includes('has no connector files'), 45_000);
      } finally {
        child.kill('SIGTERM');
      }
      await exited;
      const line = stderr
        .split('\n')
        .filter((l) => l.includes('has no connector files'))
        .map((l) => JSON.parse(l) as { level: number; msg: string; connectorsDir: string; subFolders: { folder: string; files: number }[] });
      expect(line, stderr).toHaveLength(1);
      expect(line[0]!.level, 'a warning').toBe(40);
      expect(line[0]!.connectorsDir).toBe(dir);
      expect(line[0]!.subFolders).toEqual([{ folder: join(dir, 'examples'), files: 1 }]);
      expect(line[0]!.msg).toContain(`${join(dir, 'examples')} holds 1`);
      expect(line[0]!.msg).toContain(`ce-gateway connectors check ${join(dir, 'examples')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ce-gateway serve with GATEWAY_WORKERS=2 and a CONNECTORS_DIR that holds only sub-folders', { timeout: 90_000 }, () => {
  it('says it once, not once per worker', async () => {
    // Each worker loads the same folder and each said it: two identical warnings for one folder.
    // Kafka at a loopback port nothing listens on: the first generation of workers listens at
    // once (cli/workers.ts) and keeps trying the broker, which is all this needs.
    const closed = await new Promise<number>((ok) => {
      const s = createServer();
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => ok(port));
      });
    });
    const dir = mkdtempSync(join(tmpdir(), 'cegw-connectors-'));
    try {
      mkdirSync(join(dir, 'examples'));
      writeFileSync(join(dir, 'examples', 'hook.yaml'), 'kind: shell-hook\n');
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1', CONNECTORS_DIR: dir, GATEWAY_WORKERS: '2', KAFKA_BROKERS: `127.0.0.1:${closed}`, SHUTDOWN_TIMEOUT_MS: '3000', CE_GATEWAY_ENV_FILE: '/dev/null' };
      for (const name of ['SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CATALOG_DIR', 'OPS_PORT']) delete env[name];
      const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], { cwd: tmpdir(), env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
      const count = (msg: string): number => stderr.split('\n').filter((l) => l.includes(msg)).length;
      try {
        // Both workers past the point where they said it (it comes before their listening line).
        await waitFor('both workers listening', () => count('"msg":"listening"') >= 2, 75_000);
      } finally {
        // The primary stops its workers (SIGTERM to each) and exits.
        child.kill('SIGTERM');
      }
      await exited;
      const lines = stderr
        .split('\n')
        .filter((l) => l.includes('has no connector files'))
        .map((l) => JSON.parse(l) as { level: number; connectorsDir: string; subFolders: { folder: string; files: number }[]; worker?: number });
      expect(lines, stderr).toHaveLength(1);
      expect(lines[0]!.level, 'a warning').toBe(40);
      expect(lines[0]!.connectorsDir).toBe(dir);
      expect(lines[0]!.subFolders).toEqual([{ folder: join(dir, 'examples'), files: 1 }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
