/**
 * A Kafka broker of one test's own (never the shared stack's): fault tests pause, kill and restart
 * it without disturbing anyone else. Same binaries as the stack, its own ports and data directory.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaPidFile, startKafka } from '../../scripts/stack/kafka.js';
import { preflight } from '../../scripts/stack/preflight.js';
import { readPid } from '../../scripts/stack/process.js';
import { stackConfig } from '../../scripts/stack/index.js';
import { isFree } from './ports.js';
import type { StackConfig } from '../../scripts/stack/config.js';
import { stackEnv } from './stack.js';
import { waitFor } from './wait.js';

/**
 * Private brokers take their ports at random from a range the kernel never hands out as a local
 * port of an outgoing connection (above `net.ipv4.ip_local_port_range`, 61000–65535 by default):
 * a port inside that range can be taken by any client's connection while the broker is down, and
 * its restart then fails with "Address already in use" (seen on a restart after SIGKILL).
 */
const PORT_RANGE = privatePortRange();

function privatePortRange(): { readonly from: number; readonly to: number } {
  let ephemeral: [number, number] = [32_768, 60_999];
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) ephemeral = [low!, high!];
  } catch {
    /* not Linux: keep the default */
  }
  // Room above the ephemeral range, else below it.
  if (65_535 - ephemeral[1] >= 1_000) return { from: ephemeral[1] + 1, to: 65_535 };
  if (ephemeral[0] - 1_024 >= 1_000) return { from: ephemeral[0] - 1_000, to: ephemeral[0] - 1 };
  throw new Error(`net.ipv4.ip_local_port_range ${ephemeral.join('–')} leaves no 1,000 ports for private brokers`);
}

/** A process's state letter from /proc (R, S, T = stopped, …); undefined when gone. */
export function processState(pid: number): string | undefined {
  try {
    return /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Test files run two at a time (vitest.config.ts): each vitest worker (VITEST_POOL_ID 1, 2, …)
 * takes its ports from a quarter of the range of its own, so two workers never pick the same port,
 * and a port a broker's SIGKILL left free is not taken by another worker's broker before its restart.
 */
const SLICES = 4;
const SLICE = (() => {
  const pool = Number(process.env.VITEST_POOL_ID ?? '1');
  const index = Number.isInteger(pool) && pool >= 1 ? (pool - 1) % SLICES : 0;
  const size = Math.floor((PORT_RANGE.to - PORT_RANGE.from + 1) / SLICES);
  return { from: PORT_RANGE.from + index * size, to: PORT_RANGE.from + (index + 1) * size - 1 };
})();

async function brokerPort(taken: Set<number>): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = SLICE.from + Math.floor(Math.random() * (SLICE.to - SLICE.from + 1));
    if (taken.has(port)) continue;
    taken.add(port);
    if (await isFree(port)) return port;
  }
  throw new Error(`no free port in ${SLICE.from}–${SLICE.to} (this test worker's part of ${PORT_RANGE.from}–${PORT_RANGE.to}) for a private broker`);
}

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
  /** SIGSTOP, then waits until the process is stopped (state T in /proc/<pid>/stat). */
  pause(): Promise<void>;
  /** Whether the broker process is stopped now (a SIGSTOP not yet undone). */
  paused(): boolean;
  /** Starts it again on the same data directory and ports (after a kill). */
  restart(): Promise<void>;
  /** Kills it (after SIGCONT, in case it is paused) and removes its data. */
  stop(): Promise<void>;
}

/**
 * Starts a single-node KRaft broker on free loopback ports (outside the kernel's ephemeral range) in a temporary directory
 * (10–30 s). `extraProperties`: more `server.properties` lines (e.g. a short producer-id expiry).
 * A start that fails kills the broker process it spawned and removes its directory before
 * throwing (a leaked private broker would hold memory and ports for everyone on the machine).
 */
export async function startPrivateBroker(prefix: string, opts: { extraProperties?: readonly string[] } = {}): Promise<PrivateBroker> {
  const dir = mkdtempSync(join(tmpdir(), `ceg-${prefix}-`));
  const base = stackConfig();
  const taken = new Set<number>();
  const config: StackConfig = {
    ...base,
    tlsDir: join(dir, 'tls'),
    kafka: {
      port: await brokerPort(taken), controllerPort: await brokerPort(taken), saslPort: await brokerPort(taken), sslPort: await brokerPort(taken), saslSslPort: await brokerPort(taken),
      saslUser: base.kafka.saslUser, saslPasswordFile: join(dir, 'sasl-password'), libsDir: stackEnv().kafkaLibs || base.kafka.libsDir, dir, heapMb: 512,
      ...(opts.extraProperties === undefined ? {} : { extraProperties: opts.extraProperties }),
    },
  };
  // readPid checks the process's start time too: a pid file left by a killed broker never names
  // the process that got its pid since (another test's broker, say).
  const pid = (): number | undefined => readPid(kafkaPidFile(config));
  const signal = (s: NodeJS.Signals): void => {
    const p = pid();
    // A pause that cannot be sent would let the test go on against a running broker and fail far
    // from the cause (a produce "during the pause" acknowledged): say so here.
    if (p === undefined && s === 'SIGSTOP') throw new Error(`private broker ${prefix}: no live broker process in ${kafkaPidFile(config)}: cannot pause it`);
    if (p === undefined) return;
    try {
      process.kill(p, s);
    } catch {
      /* gone already */
    }
  };
  const paused = (): boolean => {
    const p = pid();
    return p !== undefined && processState(p) === 'T';
  };
  const pause = async (): Promise<void> => {
    signal('SIGSTOP');
    await waitFor('the private broker process to be stopped (state T)', paused, 10_000, 20);
  };
  const stop = async (): Promise<void> => {
    signal('SIGCONT');
    signal('SIGKILL');
    await waitFor('the private broker to exit', () => pid() === undefined, 10_000).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  const tools = await preflight();
  try {
    await startKafka(config, tools);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    brokers: [`127.0.0.1:${config.kafka.port}`],
    saslBrokers: [`127.0.0.1:${config.kafka.saslPort}`],
    sslBrokers: [`127.0.0.1:${config.kafka.sslPort}`],
    saslSslBrokers: [`127.0.0.1:${config.kafka.saslSslPort}`],
    caFile: join(config.tlsDir, 'ca.pem'),
    config,
    pid,
    signal,
    pause,
    paused,
    restart: async () => {
      // A port the kernel gave away meanwhile would fail the bind after a long start; say which one at once.
      const ports = [config.kafka.port, config.kafka.controllerPort, config.kafka.saslPort, config.kafka.sslPort, config.kafka.saslSslPort];
      await waitFor(`the private broker's ports ${ports.join(', ')} to be free again`, async () => (await Promise.all(ports.map(isFree))).every(Boolean), 15_000);
      await startKafka(config, tools);
    },
    stop,
  };
}
