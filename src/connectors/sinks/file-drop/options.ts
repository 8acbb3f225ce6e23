/**
 * Settings of a file-drop sink: schema (shared by the loader and programmatic callers),
 * defaults, resolution into frozen {@link FileDropOptions}.
 * Spec: DESIGN "Connectors"; bus spec "Migration Path" (keep the file-drop mechanism).
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { pathProblem } from '../../names.js';

/** Schema of the `sink:` section of a `kind: file-drop` connector. Unknown keys are errors. */
export const fileDropSettingsSchema = z.strictObject({
  /** Target directory; relative = to the connector file's folder. */
  directory: z.string().superRefine((p, ctx) => {
    const problem = pathProblem(p);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  }),
  /** Put each event under `<directory>/<eventname>/` (the `eventname` attribute, else `type`). */
  subdirectoryPerEventName: z.boolean().default(false),
  /** Create missing directories (0755) instead of failing. */
  createDirectories: z.boolean().default(true),
  /** Permission bits of the files, as an octal string such as "0644". */
  fileMode: z
    .string()
    .regex(/^0?[0-7]{3}$/, 'an octal mode such as "0644"')
    .default('0644'),
  /** fsync the directory after each rename (durable names across a crash); default true. */
  syncDirectory: z.boolean().default(true),
});

export type FileDropSettings = z.input<typeof fileDropSettingsSchema>;
export type ParsedFileDropSettings = z.output<typeof fileDropSettingsSchema>;

/** A resolved, frozen file-drop configuration. */
export interface FileDropOptions {
  /** Absolute directory. */
  readonly directory: string;
  readonly subdirectoryPerEventName: boolean;
  readonly createDirectories: boolean;
  /** Permission bits, e.g. 0o644. */
  readonly fileMode: number;
  readonly syncDirectory: boolean;
}

/** Validated settings → frozen options (`directory` made absolute against `baseDir`). */
export function fileDropOptionsFrom(s: ParsedFileDropSettings, ctx: { readonly baseDir: string }): FileDropOptions {
  return Object.freeze({
    directory: isAbsolute(s.directory) ? resolve(s.directory) : resolve(ctx.baseDir, s.directory),
    subdirectoryPerEventName: s.subdirectoryPerEventName,
    createDirectories: s.createDirectories,
    fileMode: parseInt(s.fileMode, 8),
    syncDirectory: s.syncDirectory,
  });
}
