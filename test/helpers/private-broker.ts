/**
 * A Kafka broker of one test's own (never the shared stack's): fault tests pause, kill and restart
 * it without disturbing anyone else. Same binaries as the stack, its own ports and data directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaPidFile, startKafka } from '../../scripts/stack/kafka.js';
import { preflight } from '../../scripts/stack/preflight.js';
import { readPid } from '../../scripts/stack/process.js';
import { stackConfig } from '../../scripts/stack/index.js';
import type { StackConfig } from '../../scripts/stack/config.js';
import { freePort } from './ports.js';
import { stackEnv } from './stack.js';
import { waitFor } from './wait.js';

export interface PrivateBroker {
  /** `host:port` of the broker, for KAFKA_BROKERS. */
  readonly brokers: readonly string[];
  /** `host:port` of its SASL_PLAINTEXT SCRAM-SHA-512 listener (user `config.kafka.saslUser`, password in `config.kafka.saslPasswordFile`). */
  readonly saslBrokers: readonly string[];
  /** `host:port` of its SSL listener; its certificate is signed by `caFile` (a CA of this broker's own). */
  readonly sslBrokers: readonly string[];
  /** `host:port` of its SASL_SSL listener (the SASL user over the SSL listener's TLS). */
  readonly saslSslBrokers: readonly string[];
  readonly caFile: string;
  readonly config: StackConfig;
  /** The broker process's pid (undefined while it is down). */
  pid(): number | undefined;
  /** Sends `signal` to the broker process (SIGSTOP, SIGCONT, SIGKILL…); a no-op when it is down. */
  signal(signal: NodeJS.Signals): void;
  /** Starts it again on the same data directory and ports (after a kill). */
  restart(): Promise<void>;
  /** Kills it (after SIGCONT, in case it is paused) and removes its data. */
  stop(): Promise<void>;
}

/** Starts a single-node KRaft broker on free loopback ports in a temporary directory (10–30 s). */
export async function startPrivateBroker(prefix: string): Promise<PrivateBroker> {
  const dir = mkdtempSync(join(tmpdir(), `ceg-${prefix}-`));
  const base = stackConfig();
  const config: StackConfig = {
    ...base,
    tlsDir: join(dir, 'tls'),
    kafka: { port: await freePort(), controllerPort: await freePort(), saslPort: await freePort(), sslPort: await freePort(), saslSslPort: await freePort(), saslUser: base.kafka.saslUser, saslPasswordFile: join(dir, 'sasl-password'), libsDir: stackEnv().kafkaLibs || base.kafka.libsDir, dir, heapMb: 512 },
  };
  const tools = await preflight();
  await startKafka(config, tools);
  const pid = (): number | undefined => readPid(kafkaPidFile(config));
  const signal = (s: NodeJS.Signals): void => {
    const p = pid();
    if (p === undefined) return;
    try {
      process.kill(p, s);
    } catch {
      /* gone already */
    }
  };
  return {
    brokers: [`127.0.0.1:${config.kafka.port}`],
    saslBrokers: [`127.0.0.1:${config.kafka.saslPort}`],
    sslBrokers: [`127.0.0.1:${config.kafka.sslPort}`],
    saslSslBrokers: [`127.0.0.1:${config.kafka.saslSslPort}`],
    caFile: join(config.tlsDir, 'ca.pem'),
    config,
    pid,
    signal,
    restart: () => startKafka(config, tools),
    async stop() {
      signal('SIGCONT');
      signal('SIGKILL');
      await waitFor('the private broker to exit', () => pid() === undefined, 10_000).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
