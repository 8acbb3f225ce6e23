/**
 * Starts bench/lib/raw-http-producer.ts in a child process (node:http + the raw @platformatic/kafka
 * producer as the adapter drives it): the like-for-like baseline of single-event latency (issue
 * 14), with the same HTTP client and the same process layout as the gateway child. Used by
 * `npm run bench` (single-latency-platformatic) and bench/latency-probe.ts.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './gateway-process.js';

const HERE = dirname(fileURLToPath(import.meta.url));

export interface RawHttpChild {
  readonly url: string;
  readonly proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * `recorderOut`: also load bench/lib/stage-recorder.ts, writing its windows there (SIGUSR2).
 * Errors: the child exits or does not print `ready` within 60 s.
 */
export async function startRawHttpProducer(o: { brokers: string; registryUrl: string; catalogDir: string; topic: string; partitions: number; dataschemaBase: string; recorderOut?: string }): Promise<RawHttpChild> {
  const port = await freePort();
  const recorder = o.recorderOut === undefined ? [] : ['--import', join(HERE, 'stage-recorder.ts')];
  const proc = spawn(process.execPath, ['--import', 'tsx', ...recorder, join(HERE, 'raw-http-producer.ts')], {
    cwd: resolve(HERE, '../..'),
    env: {
      ...process.env,
      KAFKA_BROKERS: o.brokers,
      SCHEMA_REGISTRY_URL: o.registryUrl,
      CATALOG_DIR: o.catalogDir,
      PROBE_TOPIC: o.topic,
      PROBE_PARTITIONS: String(o.partitions),
      DATASCHEMA_BASE_URL: o.dataschemaBase,
      PORT: String(port),
      ...(o.recorderOut === undefined ? {} : { STAGE_PROBE_OUT: o.recorderOut }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await new Promise<void>((ready, reject) => {
    const timer = setTimeout(() => reject(new Error('raw HTTP producer not ready within 60 s')), 60_000);
    proc.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        ready();
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`raw HTTP producer exited (${code})`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    proc,
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
