/**
 * The bench's webhook sink in a child process (bench/lib/sink-process.ts): a partner's sink does
 * not share the load generator's event loop, so its answers and receipt times are not held up by
 * the bench's own work (issue 8, keylanes: "make the bench's sink run in its own process"). Receipt
 * times come as absolute times (`performance.timeOrigin + performance.now()` in the child) and are
 * mapped onto this process's `performance.now()`, so they compare with send times taken here.
 * `BENCH_SINK=inprocess` keeps the old sink in the bench process (for an A/B of the two).
 */
import { fork } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchSink } from './push-load.js';

// Forked with this process's execArgv, so under tsx (as the bench runs) the child runs TypeScript too.
const SCRIPT = resolve(dirname(fileURLToPath(import.meta.url)), 'sink-process.ts');

type FromSink = { readonly type: 'ready'; readonly url: string } | { readonly type: 'seen'; readonly ids: string[]; readonly at: number[]; readonly deliveries: number };

/** Starts the sink process; `delayMs` > 0 answers each delivery that much later. Errors: rejects when the child cannot start within 10 s. */
export async function startRemoteSink(delayMs = 0): Promise<BenchSink> {
  const child = fork(SCRIPT, [String(delayMs)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const firstSeen = new Map<string, number>();
  let deliveries = 0;
  const origin = performance.timeOrigin;
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error('the bench sink process did not start within 10 s')), 10_000);
    child.once('error', reject);
    child.on('message', (m: FromSink) => {
      if (m.type === 'ready') {
        clearTimeout(timer);
        resolveUrl(m.url);
        return;
      }
      deliveries = m.deliveries;
      for (let i = 0; i < m.ids.length; i++) if (!firstSeen.has(m.ids[i]!)) firstSeen.set(m.ids[i]!, m.at[i]! - origin);
    });
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url,
    firstSeen,
    deliveries: () => deliveries,
    close: async () => {
      if (child.connected) child.send({ type: 'close' });
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}
