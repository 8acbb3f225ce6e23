/**
 * `fs.watchFile` shared by every watcher of one path in the process. Node keeps one StatWatcher
 * per (resolved) path and each `watchFile` call adds a 'change' listener to it, so a process with
 * more than ten watchers on one file — a test process starting a dozen gateways on one
 * PARTNERS_FILE or one TLS certificate; `GATEWAY_WORKERS` are processes of their own and share
 * nothing — printed MaxListenersExceededWarning, Node's sign of a listener leak. Here one listener
 * per path calls every watcher's; a watcher is taken out when its signal aborts, and the path is
 * unwatched with the last one. The first watcher's interval is the path's.
 * Spec: Node `fs.watchFile` / `fs.unwatchFile` (StatWatcher per path).
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { Stats } from 'node:fs';
import { resolve } from 'node:path';

/** What a watcher is called with on each change: the file's stats now and before. */
export type FileChangeListener = (curr: Stats, prev: Stats) => void;

interface Watched {
  readonly listeners: Set<FileChangeListener>;
  readonly dispatch: FileChangeListener;
}

/** Resolved path → its one stat listener and the watchers it calls. */
const watched = new Map<string, Watched>();

/**
 * Calls `listener` on each change of `file` (polled every `intervalMs`, without keeping the
 * process alive) until `signal` aborts; nothing when it already has. Listeners must not throw
 * (as with `watchFile`, a throw is uncaught and the path's later listeners are not called).
 */
export function watchFileShared(file: string, intervalMs: number, listener: FileChangeListener, signal: AbortSignal): void {
  if (signal.aborted) return;
  const path = resolve(file);
  let w = watched.get(path);
  if (w === undefined) {
    const listeners = new Set<FileChangeListener>();
    const dispatch: FileChangeListener = (curr, prev) => {
      for (const l of listeners) l(curr, prev);
    };
    w = { listeners, dispatch };
    watched.set(path, w);
    watchFile(path, { interval: intervalMs, persistent: false }, dispatch);
  }
  // A wrapper of our own: one function watched twice (a certificate and key in one file) counts twice.
  const mine: FileChangeListener = (curr, prev) => listener(curr, prev);
  w.listeners.add(mine);
  const entry = w;
  signal.addEventListener(
    'abort',
    () => {
      entry.listeners.delete(mine);
      if (entry.listeners.size > 0 || watched.get(path) !== entry) return;
      watched.delete(path);
      unwatchFile(path, entry.dispatch);
    },
    { once: true },
  );
}

/** Paths watched now (for tests: a closed watcher's path is gone once its last watcher closed). */
export function watchedPaths(): readonly string[] {
  return [...watched.keys()];
}
