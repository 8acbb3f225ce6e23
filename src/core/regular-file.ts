/**
 * Whether a path a loader is about to read holds a regular file — checked before reading, since a
 * FIFO would make the read wait for a writer for ever, and a link loop or a link into a folder
 * this process may not enter made `existsSync` answer false ("not found"). Shared by the connector
 * loader (src/connectors/loader) and the catalog's schema files (src/catalog/load.ts).
 */
import { lstatSync, statSync } from 'node:fs';

/**
 * What is at a path, links followed: `file` (a regular file), `directory`, `missing` (no entry:
 * nothing there, or a path through a file), or the problem of an entry that cannot be read as a
 * file — `a symbolic link to nothing`, `cannot be read: <code>` (a link loop, ELOOP; a link this
 * process may not follow, EACCES), `not a regular file (a FIFO, socket or device)` (`special`).
 */
export type RegularFileState = 'file' | 'directory' | 'missing' | { readonly problem: string; readonly special?: true };

const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? String(err);

/** The {@link RegularFileState} of `path`; stats only (never opens it). Errors: none (each is a state). */
export function regularFileState(path: string): RegularFileState {
  let st;
  try {
    st = statSync(path, { throwIfNoEntry: false });
  } catch (err) {
    if (codeOf(err) === 'ENOTDIR') return 'missing';
    return { problem: `cannot be read: ${codeOf(err)}` };
  }
  if (st === undefined) {
    try {
      // The entry is there but its target is not: a dangling link, which "not found" hid.
      return lstatSync(path, { throwIfNoEntry: false }) === undefined ? 'missing' : { problem: 'a symbolic link to nothing' };
    } catch {
      return 'missing';
    }
  }
  if (st.isDirectory()) return 'directory';
  if (!st.isFile()) return { problem: 'not a regular file (a FIFO, socket or device)', special: true };
  return 'file';
}
