/**
 * The documentation's code works as written: every ```ts block of README.md and docs/*.md is
 * marked (scripts/doc-snippets.ts); `compile` and `run` snippets type-check as a package user's
 * code would (`ce-gateway` resolving to this package's public surface, with the catalog's types
 * generated the way the README tells users to), and `run` snippets run to the end with the output
 * they promise, on the in-memory transport. scripts/check-package.sh does the same against the
 * packed package.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { extractSnippets, writeSnippets } from '../../../scripts/doc-snippets.js';
import { generateCatalogFiles, writeGeneratedFiles } from '../../../src/artifacts/generate/index.js';
import { loadCatalog } from '../../../src/catalog/index.js';
import { runProcess } from '../../helpers/spawn-node.js';
import { consumerCompilerOptions, diagnosticsUnder } from '../../helpers/consumer-ts.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const TSX = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'loader.mjs')).href;
const INDEX = join(ROOT, 'src', 'index.ts');
const snippets = extractSnippets(ROOT);

const work = mkdtempSync(join(tmpdir(), 'ceg-doc-snippets-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Output each run snippet promises (what its comments and the surrounding text say it prints). */
const PROMISED: Readonly<Record<string, readonly RegExp[]>> = {
  'readme-library': [/^in-process EUR-USD_H4__22031512$/m, /^stored at \{"topic":"trading\.price-loading-completed","partition":\d+,"offset":"\d+"\}$/m, /^handled EUR-USD_H4__22031512 after 2 attempts$/m],
  'connectors-library': [/^connectors \[ 'ops\.price-loaded-drop' \]$/m, /^dropped \[ 'urn_3Ace-gateway_3A.*\.json' \]$/m],
};

describe('documentation snippets', () => {
  it('every ts block of the documentation is marked; the library and connectors examples are run', () => {
    expect(snippets.filter((s) => s.mode === 'run').map((s) => s.name)).toEqual(expect.arrayContaining(['readme-library', 'connectors-library']));
    expect(Object.keys(PROMISED).sort()).toEqual(snippets.filter((s) => s.mode === 'run').map((s) => s.name).sort());
  });

  it('compile as a package user\'s code, with the types `catalog generate` writes', () => {
    const dir = join(work, 'compile');
    writeGeneratedFiles(join(dir, 'src', 'catalog', 'generated'), generateCatalogFiles(loadCatalog(), 'consumer'));
    const files = writeSnippets(dir, snippets);
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    const options = consumerCompilerOptions({ noEmit: true, baseUrl: dir, paths: { 'ce-gateway': [INDEX] } });
    const program = ts.createProgram([...files, join(dir, 'src', 'catalog', 'generated', 'index.ts')], options);
    const diagnostics = diagnosticsUnder(program, dir).map((d) => `${d.file?.fileName.slice(dir.length + 1) ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    expect(diagnostics).toEqual([]);
  }, 120_000);

  for (const s of snippets.filter((x) => x.mode === 'run')) {
    it(`${s.name} (${s.file}:${s.line}) runs to the end and prints what it promises`, async () => {
      const dir = join(work, `run-${s.name}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
      // The shipped example connector, switched on and dropping into this folder.
      const connectors = join(dir, 'connectors');
      cpSync(join(ROOT, 'connectors', 'examples', 'price-loaded-drop.yaml'), join(connectors, 'price-loaded-drop.yaml'));
      const yaml = readFileSync(join(connectors, 'price-loaded-drop.yaml'), 'utf8');
      const patched = yaml.replace(/^enabled: false$/m, 'enabled: true').replace(/^ {2}directory: \/tmp\/ce-gateway-drop/m, '  directory: example-drops');
      expect(patched).toMatch(/^enabled: true$/m);
      expect(patched).toMatch(/^ {2}directory: example-drops/m);
      writeFileSync(join(connectors, 'price-loaded-drop.yaml'), patched);
      const [file] = writeSnippets(dir, [{ ...s, code: s.code.replaceAll("from 'ce-gateway'", `from '${pathToFileURL(INDEX).href}'`) }]);
      const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'warn', CONNECTORS_DIR: connectors };
      for (const name of ['KAFKA_BROKERS', 'SCHEMA_REGISTRY_URL', 'DATABASE_URL', 'CATALOG_DIR', 'CE_GATEWAY_ENV_FILE', 'BUS_ROLE', 'PUBLIC_BASE_URL', 'DATASCHEMA_BASE_URL']) delete env[name];
      // Asynchronously: a synchronous child of seconds keeps the vitest worker from answering its RPC.
      const r = await runProcess(process.execPath, ['--import', TSX, file!], { cwd: dir, env, timeoutMs: 60_000 });
      expect(r.code, r.stderr).toBe(0);
      for (const line of PROMISED[s.name] ?? []) expect(r.stdout).toMatch(line);
      // The enabled example connector got the published event too.
      if (s.name === 'connectors-library') expect(readdirSync(join(connectors, 'example-drops', 'PriceLoadingCompleted'))).toHaveLength(1);
    }, 90_000);
  }
});
