/**
 * Partners for tests: a PARTNERS_FILE with two partners and an admin, their API keys (random per
 * run, so a grep of the logs for them means something), and a catalog copy with an internal kind.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogWithOwnTopics } from './catalog-copy.js';

export const sha256 = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');
const newKey = (): string => randomBytes(24).toString('base64url');

/** SeriesUpdateCompleted is marked internal in {@link partnersSetup}'s catalog copy. */
export const INTERNAL_KIND = 'd6b5e2f6-5144-43bb-a2ec-5317301b7208';

export interface PartnersSetup {
  readonly dir: string;
  readonly catalogDir: string;
  readonly file: string;
  /** API keys by partner: `acme` (publishes prices as urn:partner:acme*), `globex` (publishes signals), `ops` (admin). `acmeNext` is acme's second key (rotation). */
  readonly keys: { readonly acme: string; readonly acmeNext: string; readonly globex: string; readonly ops: string };
  readonly env: Record<string, string>;
  cleanup(): void;
}

/**
 * Writes the catalog copy (topics prefixed with `topicPrefix`, SeriesUpdateCompleted internal) and
 * the partners file. `acme` has `limits` from `acmeLimits`.
 */
export function partnersSetup(topicPrefix: string, acmeLimits: Record<string, number> = {}): PartnersSetup {
  const catalog = catalogWithOwnTopics(topicPrefix);
  const catalogFile = join(catalog.dir, 'catalog.yaml');
  const text = readFileSync(catalogFile, 'utf8').replace(/(name: SeriesUpdateCompleted[\s\S]*?publish: true\n)/, '$1    internal: true\n');
  if (!text.includes('internal: true')) throw new Error('could not mark a kind internal');
  writeFileSync(catalogFile, text);
  const dir = mkdtempSync(join(tmpdir(), 'ceg-partners-'));
  const keys = { acme: newKey(), acmeNext: newKey(), globex: newKey(), ops: newKey() };
  const hashFile = join(dir, 'acme-next.sha256');
  writeFileSync(hashFile, `${sha256(keys.acmeNext)}\n`);
  const limits = Object.entries(acmeLimits).map(([k, v]) => `${k}: ${v}`).join(', ');
  const file = join(dir, 'partners.yaml');
  writeFileSync(
    file,
    `partners:
  - id: acme
    keys: [{ sha256: ${sha256(keys.acme)} }, { sha256File: ${hashFile} }]
    sources: ["urn:partner:acme", "urn:partner:acme:*"]
    publish: [PriceLoadingCompleted]
    subscribe: ["*"]
    maxSubscriptions: 2
    limits: { ${limits} }
  - id: globex
    keys: [{ sha256Env: TEST_GLOBEX_KEY_SHA256 }]
    sources: ["urn:partner:globex"]
    publish: [StrategySignal, ${INTERNAL_KIND}]
    subscribe: [PriceLoadingCompleted]
    permissions: [replay]
  - id: ops
    keys: [{ sha256: ${sha256(keys.ops)} }]
    sources: []
    publish: []
    subscribe: ["*", SeriesUpdateCompleted]
    roles: [admin]
`,
  );
  return {
    dir,
    catalogDir: catalog.dir,
    file,
    keys,
    env: { PARTNERS_FILE: file, CATALOG_DIR: catalog.dir, TEST_GLOBEX_KEY_SHA256: sha256(keys.globex) },
    cleanup: () => {
      catalog.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
