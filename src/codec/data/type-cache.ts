/**
 * Parsed Avro types by registry schema id: each id is fetched and parsed once (single-flight),
 * then kept forever (ids are immutable).
 * Spec: Confluent Schema Registry docs ("schema ids are globally unique and immutable"); STYLE
 * "a registry client that fetches each schema id once".
 */
import type { SchemaRegistry } from '../../registry/port.js';
import { avroType } from './avro-types.js';
import type { AvroType } from './avro-types.js';

export interface TypeCache {
  /** The type of schema `id`. Errors: those of `schemaById` (CEG_SCHEMA_NOT_FOUND, CEG_REGISTRY_UNAVAILABLE), CEG_SCHEMA_INVALID. A failure is not cached. */
  byId(id: number): Promise<AvroType>;
  /** The type if already loaded, else undefined (no I/O: for the hot path). */
  peek(id: number): AvroType | undefined;
}

/** A {@link TypeCache} over the registry's `schemaById`. */
export function createTypeCache(registry: Pick<SchemaRegistry, 'schemaById'>): TypeCache {
  const done = new Map<number, AvroType>();
  const pending = new Map<number, Promise<AvroType>>();
  return {
    byId(id) {
      const hit = done.get(id);
      if (hit !== undefined) return Promise.resolve(hit);
      let p = pending.get(id);
      if (p === undefined) {
        p = registry
          .schemaById(id)
          .then((text) => {
            const type = avroType(text);
            done.set(id, type);
            return type;
          })
          .finally(() => pending.delete(id));
        pending.set(id, p);
      }
      return p;
    },
    peek: (id) => done.get(id),
  };
}
