/** Shared set-up of the connector tests: envelopes, delivery contexts, temporary folders and scripts. */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/observability/index.js';
import type { Logger } from '../../../src/observability/index.js';
import type { DeliveryContext } from '../../../src/bus/subscriber/index.js';
import { fileDropOptionsFrom, fileDropSettingsSchema, shellHookOptionsFrom, shellHookSettingsSchema } from '../../../src/connectors/index.js';
import type { FileDropOptions, FileDropSettings, ResolveContext, ShellHookOptions, ShellHookSettings } from '../../../src/connectors/index.js';
import { createEnvelope } from '../../helpers/envelope.js';
import type { Envelope } from '../../../src/envelope/types.js';
import { PRICE_LOADING_COMPLETED, priceLoaded } from '../../fixtures/events.js';

/** A price-loading-completed event with the attributes a publisher fills. */
export function priceEvent(over: Record<string, string | number | boolean> = {}): Envelope {
  return createEnvelope(
    {
      id: 'evt-1',
      source: 'urn:pdsp:host-1',
      type: PRICE_LOADING_COMPLETED,
      time: '2022-03-15T12:00:02.000Z',
      subject: 'EUR/USD',
      datacontenttype: 'application/json',
      correlationid: 'corr-1',
      causationid: 'cause-1',
      eventname: 'PriceLoadingCompleted',
      partitionkey: 'EUR-USD_H4',
      schemaversion: 1,
      ...over,
    },
    { kind: 'json', value: priceLoaded() },
  );
}

/** Shell-hook options as the loader builds them from a connector file's `sink` settings. */
export function shellHookOptions(settings: ShellHookSettings, ctx: ResolveContext): ShellHookOptions {
  return shellHookOptionsFrom(shellHookSettingsSchema.parse(settings), ctx);
}

/** File-drop options as the loader builds them from a connector file's `sink` settings. */
export function fileDropOptions(settings: FileDropSettings, ctx: { readonly baseDir: string }): FileDropOptions {
  return fileDropOptionsFrom(fileDropSettingsSchema.parse(settings), ctx);
}

export const delivery: DeliveryContext = Object.freeze({ subscription: 'ops.hook', topic: 'trading.price-loading-completed', partition: 2, offset: 41n, attempt: 1 });

/** A fresh temporary folder, removed by the returned function. */
export function tempDir(prefix = 'ceg-conn-'): { readonly dir: string; readonly remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes an executable `/bin/sh` script and returns its path. */
export function writeScript(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

/** True while a process with this pid runs (a zombie waiting for its reaper counts as ended). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; state Z = exited, not yet reaped.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** A logger at debug whose JSON lines are kept in `lines`, bound to `subscription` as the reconciler's is. */
export function capturingLogger(subscription: string): { readonly lines: string[]; readonly log: Logger } {
  const lines: string[] = [];
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter((l) => l !== ''));
      done();
    },
  });
  return { lines, log: createLogger({ level: 'debug', destination: out }).child({ subscription }) };
}
