/**
 * `ce-gateway catalog generate [--catalog DIR] [--out DIR] [--check]` (folders of the caller's project,
 * relative to the working directory) and
 * `ce-gateway catalog export --out DIR [--catalog DIR] [--format json|yaml] [--base-url URL]`.
 * Both read one catalog, chosen as `schemas check` does: `--catalog`, else CATALOG_DIR, else
 * ./schemas when it holds a catalog.yaml, else the package's own (resolveCatalogDir).
 * Exit codes: 0 ok; 1 `--check` found stale generated files; 2 usage, catalog or file error
 * (also a `--base-url` holding `user:password@`: refused, as PUBLIC_BASE_URL is; also an existing
 * file in `--out` that `catalog generate` did not write: refused, nothing written). URLs are written
 * without credentials: SCHEMA_REGISTRY_URL's userinfo never reaches the document.
 * Spec: bus spec X1 (generated code checked for staleness in CI), X2 (AsyncAPI + JSON Schemas).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { errorMessage } from '../../core/errors.js';
import { hasUserinfo } from '../../core/public-url.js';
import { defaultCatalogDir, loadCatalog } from '../../catalog/index.js';
import { checkGeneratedFiles, generateCatalogFiles, isUpToDate, resolveCatalogDir, resolveGeneratePaths, writeGeneratedFiles } from '../../artifacts/generate/index.js';
import { exportCatalogFiles, writeExportedFiles } from '../../artifacts/export/index.js';
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, setup } from '../context.js';

/** The one catalog rule of both commands, for their --catalog help. */
const CATALOG_HELP = 'catalog directory holding catalog.yaml (default: CATALOG_DIR, else ./schemas when it holds a catalog.yaml, else the package\'s own schemas/)';

function fail(message: string): never {
  process.stderr.write(`ce-gateway catalog: ${message}\n`);
  process.exit(EXIT_USAGE);
}

export function registerCatalogCommand(program: Command): void {
  const catalog = program.command('catalog').description('generate code from the catalog, export AsyncAPI and JSON Schemas');

  catalog
    .command('generate')
    .description(
      'write the TypeScript constants, payload types and typed-API registration (kinds.ts) of a catalog into your project; --check compares instead of writing',
    )
    .option('--catalog <dir>', CATALOG_HELP)
    .option('--out <dir>', 'output directory, never inside node_modules (default: ./src/catalog/generated); an existing file there is replaced only when catalog generate wrote it, else nothing is written (exit 2)')
    .option('--check', 'regenerate in memory and exit 1 when the files differ (for CI)')
    .action((opts: { catalog?: string; out?: string; check?: boolean }) => {
      let files;
      let out: string;
      try {
        const { config } = setup(program);
        const paths = resolveGeneratePaths(opts, process.cwd(), config.catalogDir);
        out = paths.outDir;
        // Said, because it is rarely what a project means: its own catalog was not found.
        if (opts.catalog === undefined && config.catalogDir === undefined && paths.catalogDir === defaultCatalogDir() && paths.catalogDir !== resolve(process.cwd(), 'schemas')) {
          process.stderr.write(`catalog: ${paths.catalogDir} (the package's own example catalog: no --catalog, no CATALOG_DIR and no ./schemas/catalog.yaml)\n`);
        }
        files = generateCatalogFiles(loadCatalog(paths.catalogDir), paths.target);
      } catch (err) {
        fail(errorMessage(err));
      }
      if (opts.check) {
        const check = checkGeneratedFiles(out, files);
        if (isUpToDate(check)) {
          process.stdout.write(`generated files in ${out} are up to date\n`);
          process.exit(EXIT_OK);
        }
        for (const p of check.changed) process.stderr.write(`stale: ${p}\n`);
        for (const p of check.missing) process.stderr.write(`missing: ${p}\n`);
        for (const p of check.extra) process.stderr.write(`no longer generated: ${p}\n`);
        process.stderr.write('run `ce-gateway catalog generate` (same --catalog and --out) and commit the result\n');
        process.exit(EXIT_CHECK_FAILED);
      }
      try {
        const written = writeGeneratedFiles(out, files);
        process.stdout.write(written.length === 0 ? `${out}: up to date\n` : written.map((p) => `wrote ${resolve(out, p)}\n`).join(''));
      } catch (err) {
        fail(errorMessage(err));
      }
    });

  catalog
    .command('export')
    .description('write the AsyncAPI 3.0 document and a JSON Schema per kind; servers and registry URL from KAFKA_BROKERS / SCHEMA_REGISTRY_URL')
    .requiredOption('--out <dir>', 'output directory')
    .option('--catalog <dir>', CATALOG_HELP)
    .option('--format <format>', 'json or yaml (the AsyncAPI document; JSON Schemas are always JSON)', 'json')
    .option('--base-url <url>', 'public base URL of the gateway HTTP API (PUBLIC_BASE_URL for this run): JSON Schema $id, links and the dataschema address unless DATASCHEMA_BASE_URL is set')
    .option('--title <title>', 'info.title of the AsyncAPI document')
    .option('--api-version <version>', 'info.version of the AsyncAPI document (default 1.0.0)')
    .action((opts: { out: string; catalog?: string; format: string; baseUrl?: string; title?: string; apiVersion?: string }) => {
      if (opts.format !== 'json' && opts.format !== 'yaml') fail(`--format must be json or yaml, not ${opts.format}`);
      // The document is published: credentials in its base URL would be handed to every reader.
      if (opts.baseUrl !== undefined && hasUserinfo(opts.baseUrl)) fail('--base-url must not hold credentials (user:password@): it is written into the published document');
      try {
        // --base-url is PUBLIC_BASE_URL for this run, so `dataschema` follows it as it does in the gateway.
        const { config } = setup(program, opts.baseUrl === undefined ? {} : { PUBLIC_BASE_URL: opts.baseUrl });
        const cat = loadCatalog(resolveCatalogDir(opts.catalog, config.catalogDir, process.cwd()));
        const files = exportCatalogFiles(
          cat,
          {
            ...(opts.title === undefined ? {} : { title: opts.title }),
            ...(opts.apiVersion === undefined ? {} : { version: opts.apiVersion }),
            ...(config.kafka === undefined ? {} : { kafkaBrokers: config.kafka.brokers }),
            ...(config.registry === undefined ? {} : { registryUrl: config.registry.url }),
            ...(opts.baseUrl === undefined ? {} : { publicBaseUrl: config.publicBaseUrl }),
            dataschemaBase: config.dataschemaBase,
          },
          opts.format,
        );
        for (const p of writeExportedFiles(resolve(opts.out), files)) process.stdout.write(`wrote ${resolve(opts.out, p)}\n`);
      } catch (err) {
        fail(errorMessage(err));
      }
    });
}
