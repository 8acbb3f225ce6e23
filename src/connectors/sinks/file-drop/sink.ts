/**
 * File-drop sink: writes each event, as a structured-mode CloudEvent (JSON), atomically into a
 * directory under a name derived from its `source` + `id`. A redelivered event overwrites its own
 * file with the same content, so redelivery is harmless (dedup by name).
 * Spec: bus spec "Migration Path" (do not remove the file-drop mechanism), S3, S4;
 * CloudEvents JSON format 1.0.2 §3; DESIGN "Connectors".
 */
import { join } from 'node:path';
import { retry } from '../../../bus/subscriber/index.js';
import type { DeliveryContext, EventHandler, Outcome } from '../../../bus/subscriber/index.js';
import { structuredJsonText } from '../../../codec/json/index.js';
import { errorMessage } from '../../../core/errors.js';
import type { Envelope } from '../../../envelope/types.js';
import type { Logger } from '../../../observability/index.js';
import { jsonView } from '../../event-view.js';
import type { AtomicFs } from './atomic-write.js';
import { makeDirectories, removeStaleTempFiles, writeFileAtomic } from './atomic-write.js';
import { eventDirName, eventFileName } from './file-name.js';
import type { FileDropOptions } from './options.js';

/**
 * The file content of an event: its structured-mode JSON (data decoded from Avro shown as JSON,
 * see event-view.ts) and a newline. Throws as structuredJsonText.
 */
export function eventFileContent(event: Envelope): Buffer {
  return Buffer.from(`${structuredJsonText(jsonView(event))}\n`, 'utf8');
}

/** Where `event` lands under `o`: the absolute path of its file. */
export function eventFilePath(event: Envelope, o: FileDropOptions): string {
  const a = event.attributes;
  const name = eventFileName(a.source, a.id);
  if (!o.subdirectoryPerEventName) return join(o.directory, name);
  const eventName = typeof a.eventname === 'string' && a.eventname !== '' ? a.eventname : a.type;
  return join(o.directory, eventDirName(eventName), name);
}

/**
 * A subscriber handler that drops each event into `o.directory`.
 * Outcomes: resolves with nothing (handled) once the file is renamed into place (and the
 *   directory synced when asked); with `retry(reason)` on a file-system error (disk full,
 *   permissions, missing directory with `createDirectories: false`). Throws GatewayError
 *   CEG_INVALID_DATA (retriable false: dead letter) for data with no JSON form.
 * Folders: with `createDirectories`, missing ones are created with mode 0755 exactly (whatever
 *   the umask); a folder removed after that (a consumer deleting an event-name folder) is
 *   created again and the write tried once more within the same attempt.
 * Leftovers: the first time the sink writes into a folder, it removes the temporary files a
 *   crash left there (older than an hour: {@link removeStaleTempFiles}).
 * Spec: bus spec "Migration Path", S4; docs/connectors.md "File drop".
 */
export function createFileDropSink(o: FileDropOptions, log: Logger, fs?: AtomicFs): EventHandler {
  const made = new Set<string>();
  const swept = new Set<string>();
  // A logger that already names the subscription (the subscription reconciler binds it) gets no second `subscription` key.
  const bound = 'subscription' in log.bindings();
  const write = (path: string, content: Buffer): Promise<void> => writeFileAtomic(path, content, { mode: o.fileMode, syncDirectory: o.syncDirectory, ...(fs === undefined ? {} : { fs }) });
  return async (event: Envelope, ctx: DeliveryContext): Promise<Outcome | undefined> => {
    const content = eventFileContent(event);
    const path = eventFilePath(event, o);
    const dir = join(path, '..');
    const named = bound ? {} : { subscription: ctx.subscription };
    try {
      if (o.createDirectories && !made.has(dir)) {
        await makeDirectories(dir, 0o755);
        made.add(dir);
      }
      if (!swept.has(dir)) {
        swept.add(dir);
        const removed = await removeStaleTempFiles(dir);
        if (removed.length > 0) log.info({ ...named, directory: dir, removed: removed.length }, 'removed temporary files left by a crash');
      }
      try {
        await write(path, content);
      } catch (err) {
        // The folder was removed since it was made (a consumer cleaning up): make it again, write once more.
        if (!o.createDirectories || (err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        made.delete(dir);
        await makeDirectories(dir, 0o755);
        made.add(dir);
        await write(path, content);
      }
    } catch (err) {
      made.delete(dir);
      log.warn({ ...named, id: event.attributes.id, attempt: ctx.attempt, path, err: errorMessage(err) }, 'file drop failed');
      return retry(`file drop to ${path} failed: ${errorMessage(err)}`);
    }
    log.debug({ ...named, id: event.attributes.id, path }, 'event dropped');
    return undefined;
  };
}
