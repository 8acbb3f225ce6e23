/**
 * `npm run stack:up` with a port of the stack taken (scripts/stack/ports.ts, index.ts `stackUp`).
 * Before, nothing checked: PostgreSQL started, then Kafka (or the registry) failed with "exited
 * during start-up" and a log tail, never naming the port or what held it, and what had started
 * stayed up (half a stack); a port held by another stack's broker even passed the readiness probe.
 * Now the ports are checked before anything starts or is fetched: each taken one is named with its
 * setting, service and holder (pid and command line), exit 2, nothing started.
 * The holder is a real process of this test (a child listening on the ports); the stack runs in a
 * temporary state folder on ports of its own, so the shared stack is never touched.
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STACK_PORT_DEFAULTS, stackConfig } from '../../../scripts/stack/config.js';
import { portClashes, stackPorts, takenPorts } from '../../../scripts/stack/ports.js';
import type { StackPort } from '../../../scripts/stack/ports.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { freePort } from '../../helpers/ports.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const MARKER = 'ceg-port-holder-test';
const SETTINGS = Object.keys(STACK_PORT_DEFAULTS);

let holder: ChildProcessWithoutNullStreams;
let held: number[];
const temps: string[] = [];

/** A child process listening on `n` loopback ports (the OS's choice) until killed, closing each connection at once (a status probe fails fast); its argv carries MARKER. */
async function portHolder(n: number): Promise<{ child: ChildProcessWithoutNullStreams; ports: number[] }> {
  const script = `const net = require('node:net'); const ports = []; let left = ${n};
    for (let i = 0; i < ${n}; i++) { const s = net.createServer((c) => c.destroy()); s.listen(0, '127.0.0.1', () => { ports.push(s.address().port); if (--left === 0) console.log(JSON.stringify(ports)); }); }`;
  const child = spawn(process.execPath, ['-e', script, MARKER], { stdio: ['pipe', 'pipe', 'pipe'] });
  const line = await new Promise<string>((r, j) => {
    createInterface({ input: child.stdout }).once('line', r);
    child.once('exit', (code) => j(new Error(`port holder exited ${code}`)));
  });
  return { child, ports: JSON.parse(line) as number[] };
}

beforeAll(async () => {
  ({ child: holder, ports: held } = await portHolder(SETTINGS.length));
});
afterAll(() => {
  holder.kill('SIGKILL');
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

describe('the stack\'s port check', () => {
  it('names a port another process holds with its setting, service, pid and command line; a free port and one held by the stack\'s own service pass', async () => {
    const free = await freePort();
    const ports: StackPort[] = [
      { setting: 'STACK_KAFKA_PORT', port: held[0]!, service: 'Kafka' },
      { setting: 'STACK_REGISTRY_PORT', port: free, service: 'the schema registry' },
    ];
    const taken = await takenPorts(ports, new Set(), new Set());
    expect(taken).toHaveLength(1);
    expect(taken[0]).toMatchObject({ setting: 'STACK_KAFKA_PORT', port: held[0], service: 'Kafka' });
    expect(taken[0]!.holders.map((h) => h.pid)).toEqual([holder.pid]);
    expect(taken[0]!.holders[0]!.command).toContain(MARKER);
    // `stack:up` on a running stack: its own services hold its ports.
    expect(await takenPorts(ports, new Set([holder.pid!]), new Set())).toEqual([]);
  });

  it('refuses two settings naming one port', () => {
    const ports = stackPorts(stackConfig()).map((p) => (p.setting === 'STACK_REGISTRY_TLS_PORT' ? { ...p, port: 18081 } : p));
    expect(portClashes(ports)).toEqual(['STACK_REGISTRY_TLS_PORT and STACK_REGISTRY_PORT are both 18081']);
  });

  it('stack:up with its ports taken: exit 2, every port named with its holder, nothing started or made', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ceg-stack-ports-'));
    temps.push(root);
    const stateDir = join(root, 'state');
    const ports = Object.fromEntries(SETTINGS.map((s, i) => [s, String(held[i])]));
    // Where PostgreSQL's folder of this state folder would be (as root, outside it).
    const settings: Record<string, string> = { ...ports, CE_GATEWAY_STACK_DIR: stateDir };
    const before = Object.fromEntries(Object.keys(settings).map((k) => [k, process.env[k]]));
    Object.assign(process.env, settings);
    let pgHome: string;
    try {
      pgHome = dirname(stackConfig().postgres.dataDir);
    } finally {
      for (const [k, v] of Object.entries(before)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    temps.push(pgHome);

    const r = await runProcess(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'stack', 'cli.ts'), 'up'], {
      cwd: ROOT,
      env: { ...process.env, ...ports, CE_GATEWAY_STACK_DIR: stateDir },
      timeoutMs: 120_000,
    });
    const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
    expect(r.code, said).toBe(2);
    expect(r.stdout, said).toBe('');
    const lines = r.stderr.split('\n');
    expect(lines[0], said).toBe(`stack: not starting: ${SETTINGS.length} ports of the stack are taken; nothing was started`);
    SETTINGS.forEach((setting, i) => {
      const line = lines.find((l) => l.startsWith(`  127.0.0.1:${held[i]} (${setting}, `));
      expect(line, `${setting}\n${said}`).toBeDefined();
      expect(line, said).toContain(`is held by pid ${holder.pid} (`);
    });
    expect(r.stderr, said).toContain(MARKER);
    expect(r.stderr, said).toContain('move this stack to free ports (the STACK_…_PORT settings');
    // Nothing was started or made: no state folder, no PostgreSQL folder.
    expect(existsSync(stateDir), said).toBe(false);
    expect(existsSync(pgHome), said).toBe(false);
  }, 150_000);

  it('stack:status with its ports held by other processes says so, naming each port and holder (it said only "postgres: down, kafka: up, registry: up" beside another checkout\'s stack)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ceg-stack-status-'));
    temps.push(root);
    const ports = Object.fromEntries(SETTINGS.map((s, i) => [s, String(held[i])]));
    const r = await runProcess(process.execPath, ['--import', 'tsx', join(ROOT, 'scripts', 'stack', 'cli.ts'), 'status'], {
      cwd: ROOT,
      env: { ...process.env, ...ports, CE_GATEWAY_STACK_DIR: join(root, 'state') },
      timeoutMs: 120_000,
    });
    const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
    // The holder answers no Kafka or registry request: every service is down here.
    expect(r.code, said).toBe(1);
    expect(r.stdout, said).toBe('postgres: down\nkafka: down\nregistry: down\n');
    const lines = r.stderr.split('\n');
    expect(lines[0], said).toMatch(new RegExp(`^stack: not this stack's: ${SETTINGS.length} ports of this checkout's stack are held by other processes`));
    SETTINGS.forEach((setting, i) => {
      const line = lines.find((l) => l.startsWith(`  127.0.0.1:${held[i]} (${setting}, `));
      expect(line, `${setting}\n${said}`).toBeDefined();
      expect(line, said).toContain(`is held by pid ${holder.pid} (`);
    });
    expect(r.stderr, said).toContain('CE_GATEWAY_ENV_FILE=<its checkout>/.stack/env (README "A stack that is already running")');
  }, 150_000);
});
