/**
 * Atomic file replacement: write a temporary file in the target's directory, fsync it, rename it
 * over the target, fsync the directory. Readers see the old file or the new one, never a part.
 * Spec: POSIX rename(2) (atomic replacement within one file system); DESIGN "Connectors"
 * (file drop, "genuinely good" per bus spec "Migration Path").
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';

/** The file operations used (node:fs/promises fits); injectable so tests can watch the order. */
export interface AtomicFs {
  /** `chmod` on the handle (node's FileHandle has it): the bits open() gives are reduced by the umask. */
  open(path: string, flags: string, mode?: number): Promise<{ writeFile(data: Uint8Array): Promise<void>; sync(): Promise<void>; close(): Promise<void>; chmod?(mode: number): Promise<void> }>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
}

/** Temporary files start with `.` and end in `.tmp`: directory watchers skip them. */
export function tempNameFor(target: string): string {
  return join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** The names {@link tempNameFor} gives: `.<name>.<pid>.<12 hex>.tmp`. */
export const TEMP_NAME = /^\..+\.[0-9]+\.[0-9a-f]{12}\.tmp$/;

/** Age after which a temporary file is taken as left behind by a crash, ms (a write takes milliseconds). */
export const STALE_TEMP_AGE_MS = 60 * 60 * 1000;

/**
 * Removes the temporary files of {@link TEMP_NAME} in `dir` (not below) last modified more than
 * `olderThanMs` (default {@link STALE_TEMP_AGE_MS}) before `nowMs`: what a crash between write
 * and rename left behind. Age decides, not whether the writer's pid is alive: a folder may be
 * shared by gateways on several hosts, whose pids mean nothing here.
 * Resolves with the names removed; never rejects (a missing folder, a file removed meanwhile or
 * a refused unlink is skipped).
 */
export async function removeStaleTempFiles(dir: string, o: { readonly olderThanMs?: number; readonly nowMs?: number } = {}): Promise<string[]> {
  const before = (o.nowMs ?? Date.now()) - (o.olderThanMs ?? STALE_TEMP_AGE_MS);
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!TEMP_NAME.test(name)) continue;
    const path = join(dir, name);
    try {
      const st = await fsp.lstat(path);
      if (!st.isFile() || st.mtimeMs >= before) continue;
      await fsp.unlink(path);
      removed.push(name);
    } catch {
      // gone meanwhile, or not ours to remove
    }
  }
  return removed;
}

/**
 * Creates `dir` and its missing parents with permission bits `mode` exactly: mkdir's mode is
 * reduced by the umask, so each folder created here (and only those) is chmod-ed afterwards.
 * Errors: the file system's (EACCES, ENOTDIR, EEXIST for a file in the way…).
 */
export async function makeDirectories(dir: string, mode = 0o755): Promise<void> {
  const first = await fsp.mkdir(dir, { recursive: true, mode });
  if (first === undefined) return;
  // mkdir created `first` and every folder from there down to `dir`.
  const created: string[] = [];
  for (let d = resolve(dir); ; d = dirname(d)) {
    created.push(d);
    if (d === resolve(first) || dirname(d) === d) break;
  }
  for (const d of created.reverse()) await fsp.chmod(d, mode);
}

/**
 * Writes `data` to `target` atomically (see module doc) with permission bits `mode` (exactly:
 * set with chmod, so the umask does not reduce them).
 * `syncDirectory`: fsync the directory after the rename so the new name survives a crash.
 * Errors: the file system's (ENOENT, EACCES, ENOSPC, EIO…), after removing the temporary file.
 */
export async function writeFileAtomic(target: string, data: Uint8Array, o: { mode: number; syncDirectory: boolean; fs?: AtomicFs }): Promise<void> {
  const fs: AtomicFs = o.fs ?? fsp;
  const temp = tempNameFor(target);
  const handle = await fs.open(temp, 'wx', o.mode);
  try {
    try {
      // The configured bits exactly: open()'s mode passes through the umask (0666 became 0644).
      await handle.chmod?.(o.mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, target);
  } catch (err) {
    await fs.unlink(temp).catch(() => undefined);
    throw err;
  }
  if (o.syncDirectory) {
    const dir = await fs.open(dirname(target), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
