/**
 * Atomic file replacement: write a temporary file in the target's directory, fsync it, rename it
 * over the target, fsync the directory. Readers see the old file or the new one, never a part.
 * Spec: POSIX rename(2) (atomic replacement within one file system); DESIGN "Connectors"
 * (file drop, "genuinely good" per bus spec "Migration Path").
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

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
