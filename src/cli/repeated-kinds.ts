import type { Command } from 'commander';
import { loadCatalog } from '../catalog/index.js';
import { repeatedKind } from '../catalog/lookup.js';
import type { Config } from '../config/index.js';
import { EXIT_USAGE } from './context.js';

/**
 * Refuses a list of kinds on the command line that names one kind twice (the same text, or its
 * business name and its eventId) with a usage error (exit 2) naming `option` and both positions,
 * before anything connects — as `POST /subscriptions` answers 400 naming `kinds[i]`. The list was
 * taken (a repeat counted once), so a slip for another kind went unnoticed. Reads the catalog of
 * CATALOG_DIR (the one the command runs with). Unknown kinds are left to the command. `option`:
 * how the message starts (`tail`, `subscribe --kind`).
 */
export function refuseRepeatedKind(program: Command, config: Pick<Config, 'catalogDir'>, refs: readonly string[], option: string): void {
  if (refs.length < 2) return;
  const r = repeatedKind(loadCatalog(config.catalogDir), refs);
  if (r === undefined) return;
  program.error(`${option}: ${JSON.stringify(refs[r.index]!.slice(0, 100))} (kind ${r.index + 1}) names ${r.kind.name} (eventId ${r.kind.eventId}) again, as kind ${r.first + 1} did: name each kind once`, { exitCode: EXIT_USAGE });
}
