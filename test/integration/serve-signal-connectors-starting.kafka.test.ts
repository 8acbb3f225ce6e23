/**
 * `ce-gateway serve` stopped while its connectors start (breaker report 2026-12-06): the drain was
 * armed only once every connector had started (each starts a consumer: seconds with several), so
 * a SIGTERM in that window — the listener already serving — ended the process at once, undrained,
 * by Node's default. Now the stop waits for the connectors still starting, stops them and closes
 * the gateway: exit 0 with "stopped". The real CLI under tsx on the stack's Kafka; a file-drop
 * connector into a temporary folder. No time is asserted.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { catalogWithOwnTopics } from '../helpers/catalog-copy.js';
import { freePort } from '../helpers/ports.js';
import { serveEnv } from '../helpers/serve-env.js';
import { uniqueName } from '../helpers/stack.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const catalog = catalogWithOwnTopics(uniqueName('conn-start'));
afterAll(() => catalog.cleanup());

describe('serve stopped while its connectors start', () => {
  it('SIGTERM right after "listening" drains and exits 0 instead of dying by the signal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ceg-conn-start-'));
    const connectors = join(dir, 'connectors');
    mkdirSync(connectors);
    writeFileSync(join(connectors, 'drop.yaml'), [
      'kind: file-drop',
      `subscription: ${uniqueName('conn-start-drop')}`,
      'kinds: [PriceLoadingCompleted]',
      'sink:',
      `  directory: ${join(dir, 'out')}`,
      '  createDirectories: true',
      '',
    ].join('\n'));
    const child = spawn(process.execPath, [...CLI_ENTRY, 'serve'], {
      env: serveEnv({ catalogDir: catalog.dir, subscriptionsTopic: uniqueName('conn-start-defs'), port: await freePort() }, { CONNECTORS_DIR: connectors }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let signalled = false;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      // At once on the line: the connectors' start (a consumer each, after the bootstrap) follows it.
      if (!signalled && /"msg":"listening"/.test(stderr)) {
        signalled = true;
        child.kill('SIGTERM');
      }
    });
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    try {
      const r = await exited;
      expect(signalled, stderr.slice(-3000)).toBe(true);
      expect(r, stderr.slice(-3000)).toEqual({ code: 0, signal: null });
      expect(stderr).toMatch(/"signal":"SIGTERM".*"msg":"shutting down"/);
      expect(stderr).toMatch(/"msg":"stopped"/);
      expect(stderr).not.toMatch(/cannot start/);
    } finally {
      clearTimeout(killer);
    }
  }, 120_000);
});
