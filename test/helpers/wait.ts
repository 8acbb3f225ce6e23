/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000, intervalMs = 50): Promise<Exclude<T, undefined | false>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v as Exclude<T, undefined | false>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Edits a watched file (`edit`) every `intervalMs` until `done()` holds, or fails after `timeoutMs`.
 * Node's stat watcher (fs.watchFile) takes its first stat — what a change is told against — on the
 * thread pool after watchFile returned: on a busy machine an edit made at once can come before it
 * and is then no change at all (a CI failure, 2026-12-07). `edit` must change the file each time
 * (its modification time does).
 */
export async function editUntil(what: string, edit: () => void, done: () => boolean, timeoutMs = 20_000, intervalMs = 250): Promise<void> {
  await waitFor(what, () => {
    if (done()) return true;
    edit();
    return false;
  }, timeoutMs, intervalMs);
}
