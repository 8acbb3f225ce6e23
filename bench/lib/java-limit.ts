/**
 * The broker's limit as Kafka's own Java producer reaches it: `org.apache.kafka.tools.ProducerPerformance`
 * (kafka-tools jar, same version as the broker) with acks=all and idempotence, records of a fixed
 * size, no headers. Classpath: the stack's Kafka jars (kafka-clients, argparse4j, jackson come with
 * kafka_2.13) plus kafka-tools, which the stack's Maven pom now lists; for a stack fetched before
 * that, the one jar is fetched here with Maven into ~/.cache/ce-gateway (once).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface JavaLimit {
  readonly records: number;
  readonly recordSize: number;
  readonly eventsPerS: number;
  readonly avgLatencyMs: number;
  readonly command: string;
}

/** The kafka-tools jar: in the stack's libs, else fetched once into the cache. */
async function toolsJar(libs: string, version: string): Promise<string> {
  const inLibs = readdirSync(libs).find((f) => f === `kafka-tools-${version}.jar`);
  if (inLibs !== undefined) return join(libs, inLibs);
  const dir = join(homedir(), '.cache/ce-gateway', `kafka-tools-${version}`);
  const jar = join(dir, `kafka-tools-${version}.jar`);
  if (existsSync(jar)) return jar;
  mkdirSync(dir, { recursive: true });
  await run('mvn', ['-B', '-q', 'dependency:copy', `-Dartifact=org.apache.kafka:kafka-tools:${version}`, `-DoutputDirectory=${dir}`], { maxBuffer: 16 * 1024 * 1024 });
  return jar;
}

/** Runs ProducerPerformance to `topic`; parses its final summary line ("N records sent, X records/sec …"). */
export async function javaProducerLimit(o: { libs: string; version: string; brokers: readonly string[]; topic: string; records: number; recordSize: number }): Promise<JavaLimit> {
  const cp = `${join(o.libs, '*')}:${await toolsJar(o.libs, o.version)}`;
  const args = [
    '-Xmx512m', '-cp', cp, 'org.apache.kafka.tools.ProducerPerformance',
    '--topic', o.topic, '--num-records', String(o.records), '--record-size', String(o.recordSize), '--throughput', '-1',
    '--producer-props', `bootstrap.servers=${o.brokers.join(',')}`, 'acks=all', 'enable.idempotence=true', 'compression.type=none',
  ];
  const { stdout } = await run('java', args, { maxBuffer: 64 * 1024 * 1024 });
  const last = stdout.trim().split('\n').reverse().find((l) => /records sent/.test(l)) ?? '';
  const m = /([\d.]+) records\/sec.*?([\d.]+) ms avg latency/.exec(last);
  if (m === null) throw new Error(`ProducerPerformance printed no summary: ${stdout.slice(-500)}`);
  return { records: o.records, recordSize: o.recordSize, eventsPerS: Number(m[1]), avgLatencyMs: Number(m[2]), command: `java ${args.slice(3, 4).join(' ')} ProducerPerformance ${args.slice(4).join(' ')}` };
}
