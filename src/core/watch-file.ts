/**
 * Watching a file the process loaded: a change is told against the stats of what the caller read,
 * not against what a first poll happened to see. Node's `fs.watchFile` takes its first stat on the
 * thread pool after it returns and tells later stats only against that one, so an edit landing
 * between a caller's read and that first stat became the watcher's starting point and was never
 * reported: the gateway kept the old partners file or certificate until the next edit (32 of 40
 * edits made right after `watchFile` were missed on the dev machine, 2026-12-07). A StatWatcher
 * takes no starting stats and never shows its first ones, so the poll is our own: the caller reads
 * with {@link readWatchedFile} (the stats are taken before the bytes, on one descriptor) and hands
 * those stats to {@link watchFileShared}; each poll is one `fs.stat` of the path, compared with
 * each watcher's own last stats.
 *
 * Every watcher of one (resolved) path in the process shares one poll (a test process starts a
 * dozen gateways on one PARTNERS_FILE or one TLS certificate; `GATEWAY_WORKERS` are processes of
 * their own and share nothing); each keeps its own baseline, since each loaded at its own time. A
 * watcher is taken out when its signal aborts, and the poll stops with the last one. The first
 * watcher's interval is the path's.
 *
 * A change is a new device, inode, mode, size, modification or status-change time, or the file
 * appearing or disappearing: an edit in place, a rename over the path (an editor's save; a
 * Kubernetes Secret update swaps the `..data` symlink the path goes through: a new inode), a
 * delete, a re-create. A rewrite to the same size within one tick of the file system's clock
 * (coarse on some kernels: a few ms) is no change to any stat poll, this one or Node's.
 * Spec: POSIX `stat` (`st_dev`, `st_ino`, `st_mode`, `st_size`, `st_mtim`, `st_ctim`); Node
 * `fs.stat`, `fs.fstat`.
 */
import { closeSync, fstatSync, openSync, readFileSync, stat } from 'node:fs';
import type { Stats } from 'node:fs';
import { resolve } from 'node:path';

/**
 * What a watcher is called with on each change: the file's stats now and the ones it was last told
 * against (at first, those its caller loaded); `undefined` when the file is not there (or cannot
 * be stat'ed: a directory on its path gone, no search permission).
 */
export type FileChangeListener = (curr: Stats | undefined, prev: Stats | undefined) => void;

/** A file's bytes and its stats, taken on the same descriptor just before the bytes were read. */
export interface WatchedFileRead {
  readonly data: Buffer;
  readonly stats: Stats;
}

/**
 * Reads `file` whole, with its stats taken first (`fstat` on the descriptor that is then read): the
 * baseline to give {@link watchFileShared}. Stats older than the bytes can only make a later poll
 * report a change already read (a reload of the same bytes); stats newer than the bytes would hide
 * an edit, so they are never taken after the read. A symlink is followed, as the poll's `stat` does.
 * Errors: as `fs.readFileSync` (an `Error` with `code`: ENOENT, EACCES, EISDIR…).
 */
export function readWatchedFile(file: string): WatchedFileRead {
  const fd = openSync(file, 'r');
  try {
    const stats = fstatSync(fd);
    return { data: readFileSync(fd), stats };
  } finally {
    closeSync(fd);
  }
}

interface Watcher {
  /** The stats this watcher was last told against; at first, the caller's. */
  last: Stats | undefined;
  /** The number of the last poll begun when it was added: that poll's stats may predate its load. */
  readonly addedDuring: number;
  readonly listener: FileChangeListener;
}

interface Watched {
  readonly watchers: Set<Watcher>;
  readonly intervalMs: number;
  /** Polls begun so far. */
  polls: number;
  timer: NodeJS.Timeout | undefined;
}

/** Resolved path → its one poll and the watchers it calls. */
const watched = new Map<string, Watched>();

/**
 * Calls `listener` on each change of `file` since `loaded` — the stats its caller took when it read
 * the file ({@link readWatchedFile}; `undefined`: the file was not there) — polled every
 * `intervalMs` (ms; the first watcher's interval is the path's) without keeping the process alive,
 * until `signal` aborts; nothing when it already has. An edit made after the caller's read and
 * before the first poll is reported by the first poll. Listeners must not throw (a throw is an
 * uncaught exception, as with `fs.watchFile`, and the path's later listeners are not called).
 */
export function watchFileShared(file: string, loaded: Stats | undefined, intervalMs: number, listener: FileChangeListener, signal: AbortSignal): void {
  if (signal.aborted) return;
  const path = resolve(file);
  let w = watched.get(path);
  if (w === undefined) {
    w = { watchers: new Set(), intervalMs, polls: 0, timer: undefined };
    watched.set(path, w);
    schedule(path, w);
  }
  // An entry of its own: one function watched twice (a certificate and key in one file) counts twice.
  const mine: Watcher = { last: loaded, addedDuring: w.polls, listener };
  w.watchers.add(mine);
  const entry = w;
  signal.addEventListener(
    'abort',
    () => {
      entry.watchers.delete(mine);
      if (entry.watchers.size > 0 || watched.get(path) !== entry) return;
      watched.delete(path);
      clearTimeout(entry.timer);
    },
    { once: true },
  );
}

/** The next poll of `path` in `w.intervalMs`; the timer does not keep the process alive. */
function schedule(path: string, w: Watched): void {
  w.timer = setTimeout(() => poll(path, w), w.intervalMs);
  w.timer.unref();
}

/** One stat of `path`, told to each watcher whose last stats differ; then the next poll. */
function poll(path: string, w: Watched): void {
  const n = ++w.polls;
  stat(path, (err, stats) => {
    if (watched.get(path) !== w) return; // the last watcher left while the stat was out
    const curr = err === null ? stats : undefined;
    schedule(path, w); // first: a listener that throws must not end the watch of the others
    for (const watcher of [...w.watchers]) {
      // Closed by an earlier listener: not told. Added while this stat was out: it may have loaded
      // after the stat was taken, so its own baseline is the newer one (the next poll tells it).
      if (!w.watchers.has(watcher) || watcher.addedDuring >= n || sameFile(curr, watcher.last)) continue;
      const prev = watcher.last;
      watcher.last = curr;
      watcher.listener(curr, prev);
    }
  });
}

/** Whether two stats (or absences) are one unchanged file: what tells a change (module doc). */
function sameFile(a: Stats | undefined, b: Stats | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.dev === b.dev && a.ino === b.ino && a.mode === b.mode && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/** Paths watched now (for tests: a closed watcher's path is gone once its last watcher closed). */
export function watchedPaths(): readonly string[] {
  return [...watched.keys()];
}
