/**
 * Writes the exported documents of a catalog to a directory:
 * `asyncapi.json` (or `asyncapi.yaml`) and `schemas/json/<eventId>.json`, one per kind.
 * Spec: bus spec X2 (AsyncAPI and a JSON Schema per payload).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Catalog } from '../../catalog/index.js';
import { buildAsyncApi, jsonSchemaUrl } from './asyncapi.js';
import type { AsyncApiOptions } from './asyncapi.js';
import { naturalJsonSchema } from './json-schema.js';
import { toJsonText, toYamlText } from './serialize.js';

/** One exported file: `path` relative to the output directory. */
export interface ExportedFile {
  readonly path: string;
  readonly content: string;
}

/** Text format of the AsyncAPI document. */
export type ExportFormat = 'json' | 'yaml';

/**
 * Every exported file of `catalog`, in a fixed order. Pure and deterministic.
 * Errors: those of {@link buildAsyncApi}.
 */
export function exportCatalogFiles(catalog: Catalog, opts: AsyncApiOptions = {}, format: ExportFormat = 'json'): readonly ExportedFile[] {
  const doc = buildAsyncApi(catalog, opts);
  const files: ExportedFile[] = [{ path: `asyncapi.${format}`, content: format === 'json' ? toJsonText(doc) : toYamlText(doc) }];
  for (const kind of catalog.kinds) {
    const schema = naturalJsonSchema(kind, opts.publicBaseUrl === undefined ? {} : { id: jsonSchemaUrl(opts.publicBaseUrl, kind) });
    files.push({ path: `schemas/json/${kind.eventId}.json`, content: toJsonText(schema) });
  }
  return files;
}

/**
 * Writes {@link exportCatalogFiles} under `outDir` (created when missing), overwriting.
 * Returns the relative paths written. Errors: Node fs errors (EACCES, …).
 */
export function writeExportedFiles(outDir: string, files: readonly ExportedFile[]): readonly string[] {
  for (const f of files) {
    const path = join(outDir, f.path);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, f.content);
  }
  return files.map((f) => f.path);
}
