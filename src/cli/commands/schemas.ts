/**
 * `ce-gateway schemas check` and `ce-gateway schemas register`.
 * check: every catalog schema against the versions registered for its subject (--registry URL or
 * SCHEMA_REGISTRY_URL), or with --git (or when no registry is configured) against every earlier
 * version of its file in git history, under the kind's compatibility level.
 * register: sets each subject's level and registers the new versions, reporting what changed.
 * Exit codes: 0 compatible / registered, 1 incompatible or invalid — or, against a registry, a
 * schema identical to a registered version older than its subject's latest (`not-latest`: the
 * registry would not move "latest" to it) — 2 usage or connection error (a missing or shallow git
 * history included).
 * Spec: DESIGN "The model is the schema registry", "Conventions users already know" (exit codes).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { GatewayError, errorMessage, isGatewayError } from '../../core/errors.js';
import { CATALOG_FILE, defaultCatalogDir } from '../../catalog/index.js';
import { createConfluentRegistry, resolveConfluentOptions } from '../../registry/index.js';
import type { SchemaRegistry } from '../../registry/index.js';
import {
  checkCatalog,
  createGitHistory,
  createRegistryHistory,
  formatCheckReport,
  formatRegisterReport,
  invalidFilesReport,
  loadCatalogForCheck,
  loadCatalogForRegister,
  registerSchemas,
} from '../../schemas-check/index.js';
import type { SchemaHistory } from '../../schemas-check/index.js';
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, setup } from '../context.js';
import { codeSuffix } from '../broker-deadline.js';

interface CommonOptions {
  readonly registry?: string;
  readonly catalog?: string;
  readonly json?: boolean;
}
interface CheckOptions extends CommonOptions {
  readonly git?: boolean;
  readonly base?: string;
  readonly baseline?: string;
}

function usage(message: string): GatewayError {
  return new GatewayError('CEG_INVALID_OPTIONS', message, { retriable: false });
}

/** --catalog, else CATALOG_DIR, else ./schemas when it holds a catalog, else the package's own. */
function catalogDir(option: string | undefined, configured: string | undefined): string {
  if (option !== undefined) return resolve(option);
  if (configured !== undefined) return resolve(configured);
  const local = resolve('schemas');
  return existsSync(join(local, CATALOG_FILE)) ? local : defaultCatalogDir();
}

function registryFrom(
  url: string | undefined,
  configured: { url: string; username?: string; password?: string; ca?: string } | undefined,
): { registry: SchemaRegistry; description: string } | undefined {
  const opts = url !== undefined ? { url, timeoutMs: 10_000 } : configured === undefined ? undefined : { ...configured, timeoutMs: 10_000 };
  if (opts === undefined) return undefined;
  const resolved = resolveConfluentOptions(opts);
  return { registry: createConfluentRegistry(opts), description: `registry ${resolved.baseUrl}` };
}

function fail(err: unknown, json: boolean | undefined, command: string): number {
  const code = isGatewayError(err) ? err.code : 'CEG_INTERNAL';
  if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code, message: errorMessage(err) } })}\n`);
  process.stderr.write(`ce-gateway schemas ${command}: ${errorMessage(err)}${codeSuffix(err)}\n`);
  return EXIT_USAGE;
}

/**
 * Runs `schemas check` and returns the exit code (0 compatible, 1 incompatible, invalid or
 * not-latest, 2 usage or connection error). Writes the report to stdout (JSON with --json), errors to stderr.
 */
export async function runSchemasCheck(program: Command, opts: CheckOptions): Promise<number> {
  try {
    if (opts.git && opts.registry !== undefined) throw usage('use either --registry or --git, not both');
    const { config } = setup(program);
    // Git history is used with --git, and by default when no registry is given or configured.
    const registryMode = !opts.git && (opts.registry !== undefined || config.registry !== undefined);
    if (opts.base !== undefined && registryMode) throw usage('--base needs git history: pass --git (a registry is given or configured, so the check would use the registry)');
    if (opts.baseline !== undefined && registryMode) throw usage('--baseline needs git history: pass --git (a registry is given or configured, so the check would use the registry)');
    const dir = catalogDir(opts.catalog, config.catalogDir);
    const loaded = loadCatalogForCheck(dir);
    let history: SchemaHistory;
    const reg = opts.git ? undefined : registryFrom(opts.registry, config.registry);
    if (reg !== undefined) history = createRegistryHistory(reg.registry, reg.description, loaded.catalog === undefined ? {} : { catalog: loaded.catalog });
    else history = createGitHistory({ catalogDir: dir, ...(opts.base === undefined ? {} : { base: opts.base }), ...(opts.baseline === undefined ? {} : { baseline: opts.baseline }) });
    const report = loaded.catalog !== undefined ? await checkCatalog(loaded.catalog, history) : invalidFilesReport(history, dir, loaded.invalidFiles);
    process.stdout.write(`${opts.json ? JSON.stringify(report) : formatCheckReport(report)}\n`);
    return report.ok ? EXIT_OK : EXIT_CHECK_FAILED;
  } catch (err) {
    return fail(err, opts.json, 'check');
  }
}

/**
 * Runs `schemas register` and returns the exit code (0 every kind registered or unchanged, 1 some
 * kind invalid, incompatible, refused or not-latest — a check failure like the others: the
 * catalog's schema is not what the subject's "latest" serves — 2 usage or connection error).
 */
export async function runSchemasRegister(program: Command, opts: CommonOptions): Promise<number> {
  try {
    const { config } = setup(program);
    const reg = registryFrom(opts.registry, config.registry);
    if (reg === undefined) throw usage('no schema registry: pass --registry URL or set SCHEMA_REGISTRY_URL');
    // One invalid schema file does not stop the other kinds from registering.
    const loaded = loadCatalogForRegister(catalogDir(opts.catalog, config.catalogDir));
    const report = await registerSchemas(loaded.catalog, reg.registry, reg.description, loaded.invalidFiles);
    process.stdout.write(`${opts.json ? JSON.stringify(report) : formatRegisterReport(report)}\n`);
    return report.ok ? EXIT_OK : EXIT_CHECK_FAILED;
  } catch (err) {
    return fail(err, opts.json, 'register');
  }
}

/** Adds `schemas check` and `schemas register` to `program`. */
export function registerSchemasCommand(program: Command): void {
  const schemas = program.command('schemas').description('check and register the catalog\'s Avro schemas');
  schemas
    .command('check')
    .description('check every catalog schema against its registered versions (--registry / SCHEMA_REGISTRY_URL) or its git history (--git, or when no registry is set), under each kind\'s compatibility level; exit 0 compatible, 1 incompatible, invalid or (registry) identical to a version older than the latest, 2 usage or connection error')
    .option('--registry <url>', 'schema registry base URL (default: SCHEMA_REGISTRY_URL)')
    .option('--git', 'compare with every earlier version of each schema file in git history')
    .option('--base <rev>', 'git history (--git, or no registry set): up to this revision (default HEAD); in a pull request, the target branch (origin/main)')
    .option('--baseline <rev>', 'git history: accepted state — versions committed before this revision (e.g. the tag of an accepted breaking change) are not compared')
    .option('--catalog <dir>', 'catalog directory (default: CATALOG_DIR, ./schemas, or the package\'s own)')
    .option('--json', 'print the report as JSON')
    .action(async (opts: CheckOptions) => {
      process.exitCode = await runSchemasCheck(program, opts);
    });
  schemas
    .command('register')
    .description('set each subject\'s compatibility level and register the catalog\'s schemas that are new, after validating and checking them; reports what changed; exit 0 registered or unchanged, 1 invalid, incompatible, refused or not-latest (identical to a version older than the subject\'s latest), 2 usage or connection error')
    .option('--registry <url>', 'schema registry base URL (default: SCHEMA_REGISTRY_URL)')
    .option('--catalog <dir>', 'catalog directory (default: CATALOG_DIR, ./schemas, or the package\'s own)')
    .option('--json', 'print the report as JSON')
    .action(async (opts: CommonOptions) => {
      process.exitCode = await runSchemasRegister(program, opts);
    });
}
