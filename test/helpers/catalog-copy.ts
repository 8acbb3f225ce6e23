/**
 * A copy of the package catalog whose topic names carry a prefix of this run, so a test reads only
 * its own records however much other runs (or a benchmark) wrote to the shared stack's topics.
 * Event ids, schemas and subjects' shapes stay the same. Remove the folder with `cleanup()`.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultCatalogDir } from '../../src/catalog/index.js';

export function catalogWithOwnTopics(prefix: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ceg-catalog-'));
  cpSync(defaultCatalogDir(), dir, { recursive: true });
  const file = join(dir, 'catalog.yaml');
  const text = readFileSync(file, 'utf8').replace(/\b(trading|writing-guide)\.([a-z-]+)/g, `${prefix}.$1.$2`);
  writeFileSync(file, text);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
