/**
 * `OUTBOX_BATCH_SIZE` above the relay's bound (break report: the configuration took any integer
 * ≥ 1 — its help says so — and the relay refused more than 10000 after the gateway had been built,
 * naming its own option `batchSize`, not the variable the operator set). Now the command exits 2
 * naming `OUTBOX_BATCH_SIZE` and the bound, before touching Kafka or the database (here both are
 * on closed ports).
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ports.js';
import { CLI_ENTRY } from '../../helpers/cli-entry.js';

describe('the outbox relay command with OUTBOX_BATCH_SIZE too large', () => {
  it('exits 2 naming OUTBOX_BATCH_SIZE and its bound, without a broker', async () => {
    const closed = await freePort();
    const child = spawn(process.execPath, [...CLI_ENTRY, 'outbox', 'relay'], {
      env: { ...process.env, CE_GATEWAY_ENV_FILE: '/dev/null', KAFKA_BROKERS: `127.0.0.1:${closed}`, SCHEMA_REGISTRY_URL: `http://127.0.0.1:${closed}`, OUTBOX_DATABASE_URL: `postgres://x:y@127.0.0.1:${closed}/z`, OUTBOX_BATCH_SIZE: '20000', PORT: '0', HOST: '127.0.0.1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // A bound, should the command ever wait on the closed ports: the test then fails, not hangs.
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
    clearTimeout(kill);
    expect(stderr).toContain('OUTBOX_BATCH_SIZE');
    expect(stderr).toContain('10000');
    expect(code).toBe(2);
  });
});
