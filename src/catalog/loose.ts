/**
 * The kinds list of a catalog.yaml text read without validating it: for tools that must still see
 * which schema files a catalog names when the catalog does not load (the schema check reporting
 * invalid schema files, an older commit's catalog in git history). Anything that is not the
 * expected type is left out, never guessed.
 */
import { parse as parseYaml } from 'yaml';

/** One entry of `kinds`, with only the fields that had the expected type. */
export interface LooseKind {
  readonly eventId?: string;
  /** Schema file path, relative to the catalog directory, as written. */
  readonly schema?: string;
  /** The key's field names (its non-string entries left out). */
  readonly key?: readonly string[];
}

/**
 * The `kinds` entries of a catalog.yaml text; undefined when the text is not YAML or has no `kinds`
 * list. Entries that are not mappings are skipped. Never throws.
 */
export function looseKinds(yamlText: string): readonly LooseKind[] | undefined {
  let doc: unknown;
  try {
    doc = parseYaml(yamlText);
  } catch {
    return undefined;
  }
  const kinds = typeof doc === 'object' && doc !== null ? (doc as { kinds?: unknown }).kinds : undefined;
  if (!Array.isArray(kinds)) return undefined;
  const out: LooseKind[] = [];
  for (const k of kinds as unknown[]) {
    if (typeof k !== 'object' || k === null) continue;
    const { eventId, schema, key } = k as { eventId?: unknown; schema?: unknown; key?: unknown };
    out.push({
      ...(typeof eventId === 'string' ? { eventId } : {}),
      ...(typeof schema === 'string' ? { schema } : {}),
      ...(Array.isArray(key) ? { key: (key as unknown[]).filter((x): x is string => typeof x === 'string') } : {}),
    });
  }
  return out;
}
