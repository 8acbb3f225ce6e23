/**
 * Registers the catalog's schemas in a schema registry.
 * Spec: DESIGN "The model is the schema registry" (subjects come from the model; CI checks
 * compatibility) and "Kafka mapping" (subject naming strategies).
 */
import type { RegisteredSchema, SchemaRegistry } from '../registry/port.js';
import type { Catalog } from './types.js';

/**
 * For every kind, in catalog order: sets the subject's compatibility level, then registers the
 * kind's schema under its subject (idempotent for an unchanged schema).
 * Returns: a frozen map eventId → RegisteredSchema (id, version).
 * Errors: those of {@link SchemaRegistry.register} and {@link SchemaRegistry.setCompatibility}
 *   (CEG_SCHEMA_INCOMPATIBLE, CEG_SCHEMA_INVALID not retriable; CEG_REGISTRY_UNAVAILABLE retriable);
 *   the first failure stops the run.
 */
export async function registerCatalog(
  registry: SchemaRegistry,
  catalog: Catalog,
): Promise<ReadonlyMap<string, RegisteredSchema>> {
  const out = new Map<string, RegisteredSchema>();
  for (const kind of catalog.kinds) {
    await registry.setCompatibility(kind.subject, kind.compatibility);
    out.set(kind.eventId, await registry.register(kind.subject, kind.schema));
  }
  return out;
}
