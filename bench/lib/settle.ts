/**
 * Writes back the page cache's dirty data before a latency window (`sync`), so the window does not
 * measure the kernel flushing what an earlier scenario wrote. java-limit alone leaves ~600 MB of
 * dirty log segments; the kernel writes them back 30 s later (vm.dirty_expire_centisecs) in one go,
 * and the broker's appends wait meanwhile (2026-12-03: the push-latency window after it).
 * Returns the MiB that were dirty before, from /proc/meminfo (null where there is none).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

function dirtyMiB(): number | null {
  try {
    const m = /^Dirty:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    return m === null ? null : Math.round(Number(m[1]) / 1024);
  } catch {
    return null;
  }
}

/** `sync`, then the MiB that were dirty before it. Errors: rejects when `sync` cannot run. */
export async function writeBackDirtyPages(): Promise<number | null> {
  const before = dirtyMiB();
  await run('sync');
  return before;
}
