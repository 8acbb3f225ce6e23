/**
 * Earlier versions of a kind's schema as registered under its subject.
 * Spec: Confluent Schema Registry API (GET /subjects/{s}/versions, GET /subjects/{s}/versions/{v}).
 */
import type { EventKind } from '../catalog/index.js';
import type { SchemaRegistry } from '../registry/port.js';
import type { HistoricVersion, SchemaHistory } from './types.js';

/**
 * A {@link SchemaHistory} over a registry: every registered version of the kind's subject.
 * `description` names the registry for reports (no credentials).
 * Errors: those of the registry port (CEG_REGISTRY_UNAVAILABLE, retriable, when it does not answer).
 */
export function createRegistryHistory(registry: SchemaRegistry, description: string): SchemaHistory {
  return {
    source: 'registry',
    description,
    async versions(kind: EventKind): Promise<readonly HistoricVersion[]> {
      const numbers = await registry.versions(kind.subject);
      const out: HistoricVersion[] = [];
      for (const n of numbers) {
        const v = await registry.version(kind.subject, n);
        out.push(Object.freeze({ version: v.version, label: `version ${v.version}`, schema: v.schema }));
      }
      return Object.freeze(out);
    },
  };
}
