/**
 * CLI commands against a broker that does not answer (break report D4): a private broker frozen
 * with SIGSTOP (the kernel still accepts the TCP connection; nothing answers). A command gave up
 * after ~190 s on kafkajs and ~33 s on @platformatic/kafka; `trace --timeout` bounded its read
 * only. Now the CLI's broker deadline (`--broker-timeout`, CE_GATEWAY_BROKER_TIMEOUT_MS) ends each
 * with exit 2 and `kafka: no answer from <broker> within <ms> ms`, on both clients. The real CLI
 * in child processes, killed after 60 s (a hang fails the test, not the suite); no time is asserted.
 */
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KAFKA_CLIENTS, kafkaClientEnv } from '../helpers/kafka-client.js';
import type { KafkaClient } from '../helpers/kafka-client.js';
import { startPrivateBroker } from '../helpers/private-broker.js';
import type { PrivateBroker } from '../helpers/private-broker.js';
import { runProcess } from '../helpers/spawn-node.js';
import type { ProcessResult } from '../helpers/spawn-node.js';
import { CLI_ENTRY } from '../helpers/cli-entry.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
/** A command still running after this long is killed: it hung. */
const KILL_AFTER_MS = 60_000;

let broker: PrivateBroker;
beforeAll(async () => {
  broker = await startPrivateBroker('cli-frozen');
  await broker.pause();
}, 120_000);
afterAll(async () => {
  broker?.signal('SIGCONT');
  await broker?.stop();
}, 60_000);

function cli(client: KafkaClient, args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<ProcessResult> {
  // Not the stack's env file: only this broker, and the in-memory registry (read-only commands register nothing).
  const inherited: NodeJS.ProcessEnv = { ...process.env };
  delete inherited.SCHEMA_REGISTRY_URL;
  delete inherited.CE_GATEWAY_BROKER_TIMEOUT_MS;
  return runProcess(process.execPath, [...CLI_ENTRY, ...args], { cwd: ROOT, env: { ...inherited, CE_GATEWAY_ENV_FILE: '/dev/null', LOG_LEVEL: 'silent', KAFKA_BROKERS: broker.brokers.join(','), ...kafkaClientEnv(client), ...env }, timeoutMs: KILL_AFTER_MS });
}

function expectNoAnswer(r: ProcessResult, command: string, deadlineMs: number, bound: string): void {
  const said = `stdout: ${r.stdout}\nstderr: ${r.stderr}`;
  // It exited by itself (a kill by the timer ends it with SIGKILL and no code).
  expect(r.signal, said).toBeNull();
  expect(r.code, said).toBe(2);
  expect(r.stderr).toContain(`ce-gateway ${command}: kafka: no answer from ${broker.brokers.join(',')} within ${deadlineMs} ms (${bound})`);
}

// The two clients at once: both only connect to the frozen broker, which neither resumes or stops
// (afterAll does), and their children wait out the same deadlines side by side.
describe.concurrent('CLI commands against a frozen broker (SIGSTOP)', () => {
  for (const client of KAFKA_CLIENTS) {
    it(`${client}: topics, tail and deadletters list exit 2 naming the broker once the deadline passed; trace --timeout bounds connecting`, async () => {
      expect(broker.paused()).toBe(true);
      const [topics, tail, deadletters, trace] = await Promise.all([
        cli(client, ['--broker-timeout', '5000', 'topics']),
        // The variable, for a long-running command: only its start is bounded.
        cli(client, ['tail', 'PriceLoadingCompleted'], { CE_GATEWAY_BROKER_TIMEOUT_MS: '5000' }),
        cli(client, ['--broker-timeout', '5000', 'deadletters', 'list', 'orders']),
        // --timeout below the broker deadline (default 30 s) bounds the wait for the first answer.
        cli(client, ['trace', 'c-frozen', '--timeout', '4000']),
      ]);
      expectNoAnswer(topics, 'topics', 5000, '--broker-timeout or CE_GATEWAY_BROKER_TIMEOUT_MS');
      expectNoAnswer(tail, 'tail', 5000, '--broker-timeout or CE_GATEWAY_BROKER_TIMEOUT_MS');
      expectNoAnswer(deadletters, 'deadletters', 5000, '--broker-timeout or CE_GATEWAY_BROKER_TIMEOUT_MS');
      expectNoAnswer(trace, 'trace', 4000, '--timeout');
      expect(tail.stdout).toBe('');
    }, 150_000);
  }
});
