/**
 * `ce-gateway connectors check [DIR] [--json]`: validates a connectors folder as `serve` would
 * (every file, every problem at once, kinds against the catalog, scripts and folders on disk)
 * without starting anything. DIR defaults to CONNECTORS_DIR.
 * Exit codes: 0 valid; 1 a file has problems; 2 usage (no folder given, not a folder, unreadable catalog).
 * Spec: DESIGN "Connectors"; DESIGN "Conventions" (CLI exit codes, --json).
 */
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { errorMessage, isGatewayError } from '../../core/errors.js';
import { loadCatalog } from '../../catalog/index.js';
import { repeatedKind } from '../../catalog/lookup.js';
import { connectorFilesInSubfolders, loadConnectors } from '../../connectors/index.js';
import type { ConnectorProblem } from '../../connectors/index.js';
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, setup } from '../context.js';
import { codeSuffix } from '../broker-deadline.js';

export function registerConnectorsCommand(program: Command): void {
  const connectors = program.command('connectors').description('connector definitions (shell hooks, file drops)');
  connectors
    .command('check')
    .description('validate every connector file of a folder (default CONNECTORS_DIR) without starting anything')
    .argument('[dir]', 'connectors folder')
    .option('--json', 'print the connectors (or the problems) as JSON')
    .action((dirArg: string | undefined, opts: { json?: boolean }) => {
      const { config } = setup(program);
      const dir = dirArg ?? config.connectorsDir;
      if (dir === undefined) {
        process.stderr.write('ce-gateway connectors check: give a folder or set CONNECTORS_DIR\n');
        process.exit(EXIT_USAGE);
      }
      if (!isFolder(dir)) {
        process.stderr.write(`ce-gateway connectors check: ${dir} is not a folder\n`);
        process.exit(EXIT_USAGE);
      }
      let catalog;
      try {
        catalog = loadCatalog(config.catalogDir);
      } catch (err) {
        process.stderr.write(`ce-gateway connectors check: ${errorMessage(err)}${codeSuffix(err)}\n`);
        process.exit(EXIT_USAGE);
      }
      try {
        const defs = loadConnectors(dir, { catalog });
        const rows = defs.map((d) => ({ name: d.name, kind: d.kind, enabled: d.enabled, subscription: d.subscription, kinds: d.kinds, file: d.file }));
        if (opts.json) process.stdout.write(`${JSON.stringify(rows)}\n`);
        else for (const r of rows) process.stdout.write(`${r.name}\t${r.kind}\t${r.enabled ? 'enabled' : 'disabled'}\t${r.subscription}\t${r.kinds.join(',')}\n`);
        // stderr: the table (or JSON) on stdout stays machine-readable.
        // A kind listed twice still loads (a file that started a gateway must go on starting it),
        // but the HTTP API and the CLI refuse it: said here, where the file's owner looks.
        for (const d of defs) {
          const r = repeatedKind(catalog, d.kinds);
          if (r !== undefined) process.stderr.write(`ce-gateway connectors check: warning: ${d.file}: kinds[${r.index}] names ${r.kind.name} again (kinds[${r.first}]): it is delivered once; list each kind once (the subscriptions API refuses a repeat)\n`);
        }
        if (rows.length > 0) {
          if (!opts.json) process.stderr.write(`ce-gateway connectors check: ${dir}: ${rows.length} connector${rows.length === 1 ? '' : 's'} valid\n`);
        } else writeNoConnectorFiles(dir);
        process.exit(EXIT_OK);
      } catch (err) {
        if (!isGatewayError(err, 'CEG_INVALID_OPTIONS')) throw err;
        const problems = (err.details['problems'] ?? []) as readonly ConnectorProblem[];
        if (opts.json) process.stdout.write(`${JSON.stringify(problems)}\n`);
        else for (const p of problems) process.stderr.write(`${p.file}: ${p.path}: ${p.problem}\n`);
        process.exit(EXIT_CHECK_FAILED);
      }
    });
}

/**
 * An empty folder is valid (serve starts no connector from it: exit 0), but "0 connectors valid"
 * read as a failed check to users who pointed at this repository's `connectors/`, whose examples
 * are one level down. The check still does not recurse: it checks what `serve` would load, and
 * `serve` reads one folder, like nginx's `conf.d/*.conf` or Kafka Connect's connector files, which
 * are named, never searched for; recursing would list the examples as if they would start. So it
 * says the folder has none and names the sub-folders that do, with the command that checks them.
 */
function writeNoConnectorFiles(dir: string): void {
  process.stderr.write(`ce-gateway connectors check: ${dir}: no connector files in it, nothing to check (serve reads only the *.yaml / *.yml files directly in its folder, never sub-folders)\n`);
  for (const sub of connectorFilesInSubfolders(dir)) {
    process.stderr.write(`ce-gateway connectors check: ${sub.folder} holds ${sub.files} (never loaded from ${dir}): ce-gateway connectors check ${sub.folder}\n`);
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
