/**
 * What every bench needs before it measures, in one place (issue 14: it was written twice): the
 * stack's Kafka and registry (env first, then the stack's env file), refused unless on loopback;
 * the broker's pid for its CPU time; the machine; numeric settings from the environment; and
 * whether the gateway child runs from dist or from src.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { readStackEnv } from '../../scripts/stack/index.js';
import type { MachineInfo } from './stats.js';
import { machineInfo } from './stats.js';

export interface BenchStack {
  /** `KAFKA_BROKERS` as given (comma list). */
  readonly brokers: string;
  readonly brokerList: readonly string[];
  readonly registryUrl: string;
  /** The Kafka broker's pid (stack pid file), for its CPU time; undefined when unknown. */
  readonly brokerPid: number | undefined;
  /** The stack's Kafka jars folder, when known (java-limit needs it). */
  readonly kafkaLibs: string | undefined;
  readonly machine: MachineInfo;
}

const LOOPBACK = /^(127\.0\.0\.1|localhost|\[::1\]):\d+$/;

/**
 * The stack the bench runs against. Errors: no stack (no brokers or registry known), or a broker
 * or registry that is not on loopback (benches never send load off the machine).
 */
export function benchStack(): BenchStack {
  const file = readStackEnv();
  const brokers = process.env.KAFKA_BROKERS ?? file?.KAFKA_BROKERS;
  const registryUrl = process.env.SCHEMA_REGISTRY_URL ?? file?.SCHEMA_REGISTRY_URL;
  if (!brokers || !registryUrl) throw new Error('no stack: run `npm run stack:up` (or set KAFKA_BROKERS and SCHEMA_REGISTRY_URL)');
  const brokerList = brokers.split(',').map((b) => b.trim());
  for (const b of [...brokerList, new URL(registryUrl).host]) {
    if (!LOOPBACK.test(b)) throw new Error(`the bench runs on loopback only, got ${b}`);
  }
  const kafkaLibs = process.env.KAFKA_LIBS ?? file?.KAFKA_LIBS;
  return { brokers, brokerList, registryUrl, brokerPid: pidFrom(process.env.STACK_KAFKA_PID_FILE ?? file?.STACK_KAFKA_PID_FILE), kafkaLibs, machine: machineInfo(kafkaLibs) };
}

function pidFrom(pidFile: string | undefined): number | undefined {
  try {
    if (pidFile === undefined || pidFile === '') return undefined;
    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A positive number from the environment, else `dflt`. Errors: anything else set there. */
export function intEnv(name: string, dflt: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${v}`);
  return n;
}

/** Newest modification time under a folder, ms. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Runs the gateway from dist only when dist is at least as new as src (else tsx, with a note); `BENCH_TSX=1` forces src. */
export function preferTsx(root: string): { tsx: boolean; note?: string } {
  if (process.env.BENCH_TSX === '1') return { tsx: true, note: 'BENCH_TSX=1' };
  const dist = join(root, 'dist/cli/main.js');
  try {
    if (statSync(dist).mtimeMs < newestMtime(join(root, 'src'))) return { tsx: true, note: 'dist is older than src (run `npm run build`): running src with tsx' };
    return { tsx: false };
  } catch {
    return { tsx: true, note: 'no dist (run `npm run build`): running src with tsx' };
  }
}

/** VmRSS of a process, bytes (Linux /proc); NaN when it cannot be read. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? Number.NaN : Number(m[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}
