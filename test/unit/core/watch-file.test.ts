/**
 * watchFileShared tells each watcher of a change since what its caller read, not since what a
 * first poll saw. With Node's `fs.watchFile` an edit landing between the read and the watcher's
 * first stat (taken on the thread pool after watchFile returned) became the watcher's starting
 * point and was never reported: a gateway kept serving the old certificate, or stayed silent about
 * an edited PARTNERS_FILE, until the next edit. Each edit below changes the file's size, so it is a
 * change to a stat poll even within one tick of the file system's clock.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readWatchedFile, watchFileShared, watchedPaths } from '../../../src/core/watch-file.js';
import { waitFor } from '../../helpers/wait.js';

const dirs: string[] = [];
const closing: AbortController[] = [];
afterEach(() => {
  for (const c of closing.splice(0)) c.abort();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-watch-file-'));
  dirs.push(dir);
  return dir;
}

interface Change {
  readonly curr: Stats | undefined;
  readonly prev: Stats | undefined;
}

/** Watches `file` from `loaded` as a caller does; the changes it is told are noted. */
function watch(file: string, loaded: Stats | undefined, intervalMs = 20): { changes: Change[]; close: () => void } {
  const changes: Change[] = [];
  const c = new AbortController();
  closing.push(c);
  watchFileShared(file, loaded, intervalMs, (curr, prev) => changes.push({ curr, prev }), c.signal);
  return { changes, close: () => c.abort() };
}

describe('watchFileShared', () => {
  it('reports an edit made after the caller read the file and before the watch began', async () => {
    const file = join(tempDir(), 'partners.yaml');
    writeFileSync(file, 'partners: []\n');
    const loaded = readWatchedFile(file);
    expect(loaded.data.toString('utf8')).toBe('partners: []\n');
    writeFileSync(file, 'partners: [] # revoked acme\n');
    const w = watch(file, loaded.stats);
    await waitFor('the edit to be reported', () => w.changes.length >= 1);
    expect(w.changes[0]!.prev).toBe(loaded.stats);
    expect(w.changes[0]!.curr?.size).toBe('partners: [] # revoked acme\n'.length);
  });

  it('reports an edit made right after the call, before the first poll', async () => {
    const file = join(tempDir(), 'tls.crt');
    writeFileSync(file, 'first\n');
    const loaded = readWatchedFile(file);
    const w = watch(file, loaded.stats, 200);
    writeFileSync(file, 'second, longer\n');
    await waitFor('the edit to be reported', () => w.changes.length >= 1);
    expect(w.changes.map((c) => c.curr?.size)).toEqual(['second, longer\n'.length]);
  });

  it('tells each watcher of one path against its own load; one poll tells them all of a later edit', async () => {
    const file = join(tempDir(), 'partners.yaml');
    writeFileSync(file, 'v1\n');
    const early = readWatchedFile(file);
    writeFileSync(file, 'v2 v2\n');
    const late = readWatchedFile(file);
    const a = watch(file, early.stats);
    const b = watch(file, late.stats);
    expect(watchedPaths().filter((p) => p === file)).toEqual([file]);
    await waitFor('the early watcher to be told of v2', () => a.changes.length >= 1);
    // The poll that told `a` looked for `b` too: `b` loaded v2 and has nothing to be told.
    expect(b.changes).toEqual([]);
    writeFileSync(file, 'v3 v3 v3\n');
    await waitFor('both to be told of v3', () => a.changes.length >= 2 && b.changes.length >= 1);
    expect(a.changes.map((c) => c.curr?.size)).toEqual([6, 9]);
    expect(b.changes.map((c) => c.curr?.size)).toEqual([9]);
    a.close();
    b.close();
    expect(watchedPaths().filter((p) => p === file)).toEqual([]);
  });

  it('reports a delete (no stats) and the file put back', async () => {
    const file = join(tempDir(), 'tls.key');
    writeFileSync(file, 'key one\n');
    const loaded = readWatchedFile(file);
    const w = watch(file, loaded.stats);
    rmSync(file);
    await waitFor('the delete to be reported', () => w.changes.length >= 1);
    expect(w.changes[0]).toEqual({ curr: undefined, prev: loaded.stats });
    writeFileSync(file, 'key two, longer\n');
    await waitFor('the file put back to be reported', () => w.changes.length >= 2);
    expect(w.changes[1]!.prev).toBeUndefined();
    expect(w.changes[1]!.curr?.size).toBe('key two, longer\n'.length);
  });

  it("reports a Kubernetes Secret update (the ..data symlink swapped) made right after the read", async () => {
    // The kubelet's layout: tls.crt → ..data/tls.crt, ..data → a timestamped folder; an update
    // writes a new folder, points a new link at it and renames that link over ..data.
    const dir = tempDir();
    mkdirSync(join(dir, '..2026_12_07_1'));
    writeFileSync(join(dir, '..2026_12_07_1', 'tls.crt'), 'old certificate\n');
    symlinkSync('..2026_12_07_1', join(dir, '..data'));
    symlinkSync(join('..data', 'tls.crt'), join(dir, 'tls.crt'));
    const file = join(dir, 'tls.crt');
    const loaded = readWatchedFile(file);
    mkdirSync(join(dir, '..2026_12_07_2'));
    writeFileSync(join(dir, '..2026_12_07_2', 'tls.crt'), 'new certificate\n'); // the same size: a new inode tells it
    symlinkSync('..2026_12_07_2', join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    rmSync(join(dir, '..2026_12_07_1'), { recursive: true });
    const w = watch(file, loaded.stats);
    await waitFor('the swap to be reported', () => w.changes.length >= 1);
    expect(w.changes[0]!.curr?.ino).not.toBe(loaded.stats.ino);
    expect(readWatchedFile(file).data.toString('utf8')).toBe('new certificate\n');
  });

  it('tells a closed watcher nothing, and the others still', async () => {
    const file = join(tempDir(), 'partners.yaml');
    writeFileSync(file, 'a\n');
    const loaded = readWatchedFile(file);
    const [open, closed] = [watch(file, loaded.stats), watch(file, loaded.stats)];
    closed.close();
    writeFileSync(file, 'a longer one\n');
    await waitFor('the open watcher to be told', () => open.changes.length >= 1);
    // Both would have been told by the one poll that told `open`.
    expect(closed.changes).toEqual([]);
  });
});
