/**
 * File-drop sink: writes each event, as a structured-mode CloudEvent (JSON), atomically into a
 * directory under a name derived from its `source` + `id`. A redelivered event overwrites its own
 * file with the same content, so redelivery is harmless (dedup by name).
 * Spec: bus spec "Migration Path" (do not remove the file-drop mechanism), S3, S4;
 * CloudEvents JSON format 1.0.2 §3; DESIGN "Connectors".
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { retry } from '../../../bus/subscriber/index.js';
import type { DeliveryContext, EventHandler, Outcome } from '../../../bus/subscriber/index.js';
import { structuredJsonText } from '../../../codec/json/index.js';
import { errorMessage } from '../../../core/errors.js';
import type { Envelope } from '../../../envelope/types.js';
import type { Logger } from '../../../observability/index.js';
import { jsonView } from '../../event-view.js';
import type { AtomicFs } from './atomic-write.js';
import { writeFileAtomic } from './atomic-write.js';
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
 * Spec: bus spec "Migration Path", S4.
 */
export function createFileDropSink(o: FileDropOptions, log: Logger, fs?: AtomicFs): EventHandler {
  const made = new Set<string>();
  return async (event: Envelope, ctx: DeliveryContext): Promise<Outcome | undefined> => {
    const content = eventFileContent(event);
    const path = eventFilePath(event, o);
    const dir = join(path, '..');
    try {
      if (o.createDirectories && !made.has(dir)) {
        await mkdir(dir, { recursive: true, mode: 0o755 });
        made.add(dir);
      }
      await writeFileAtomic(path, content, { mode: o.fileMode, syncDirectory: o.syncDirectory, ...(fs === undefined ? {} : { fs }) });
    } catch (err) {
      made.delete(dir);
      log.warn({ subscription: ctx.subscription, id: event.attributes.id, attempt: ctx.attempt, path, err: errorMessage(err) }, 'file drop failed');
      return retry(`file drop to ${path} failed: ${errorMessage(err)}`);
    }
    log.debug({ subscription: ctx.subscription, id: event.attributes.id, path }, 'event dropped');
    return undefined;
  };
}
