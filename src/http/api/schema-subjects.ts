/**
 * Which schema ids belong to which event kinds, for `GET /schemas/ids/{id}` behind partner
 * authentication: a partner that is not an admin is served a schema only when its id is a
 * registered version of the subject of a kind it may publish or subscribe to (docs/security.md
 * "Schemas by id"). The registry is shared (other teams' subjects, internal kinds): without this
 * check every partner read every schema of it by counting ids.
 * The ids of a subject are learnt from the registry (its versions, then each version's id — ids
 * are immutable, so a version is looked up once) and asked again for an id none of the partner's
 * subjects holds, at most once per {@link SUBJECT_REFRESH_MS} per subject: a version registered
 * since (another instance's rollout) is found, while made-up ids cannot make the gateway hammer
 * the registry.
 * Spec: Confluent Schema Registry API (GET /subjects/{s}/versions[/{v}]); OWASP API1:2023 (BOLA:
 *   404, not 403, for a schema the partner may not read).
 */
import type { EventKind } from '../../catalog/index.js';
import type { SchemaRegistry } from '../../registry/port.js';

/** Least time between two listings of one subject's versions for an id not found, ms. */
export const SUBJECT_REFRESH_MS = 1000;

interface Known {
  /** Schema ids of the subject's versions seen so far. */
  readonly ids: Set<number>;
  /** Version numbers already looked up. */
  readonly versions: Set<number>;
  /** When (epoch ms) its versions were last listed; 0: never. */
  listedAt: number;
  /** The listing in progress, shared by concurrent requests. */
  listing: Promise<void> | undefined;
}

export class SchemaSubjects {
  readonly #registry: SchemaRegistry;
  readonly #subjects = new Map<string, Known>();

  constructor(registry: SchemaRegistry) {
    this.#registry = registry;
  }

  /**
   * Whether `id` is a version of the subject of one of `kinds`. Lists a subject's versions when it
   * was never listed, or when no subject holds `id` and its last listing is older than
   * {@link SUBJECT_REFRESH_MS}.
   * Errors: CEG_REGISTRY_UNAVAILABLE (retriable) when the registry cannot be asked.
   */
  async holds(kinds: readonly EventKind[], id: number): Promise<boolean> {
    const subjects = [...new Set(kinds.map((k) => k.subject))];
    const known = subjects.map((s) => this.#known(s));
    if (known.some((k) => k.ids.has(id))) return true;
    const now = Date.now();
    const listings: Promise<void>[] = [];
    for (const [i, s] of subjects.entries()) {
      const k = known[i]!;
      // A listing under way is awaited too: it may bring the id.
      if (k.listing !== undefined) listings.push(k.listing);
      else if (k.listedAt === 0 || now - k.listedAt >= SUBJECT_REFRESH_MS) listings.push(this.#list(s, k));
    }
    await Promise.all(listings);
    return known.some((k) => k.ids.has(id));
  }

  #known(subject: string): Known {
    let k = this.#subjects.get(subject);
    if (k === undefined) this.#subjects.set(subject, (k = { ids: new Set(), versions: new Set(), listedAt: 0, listing: undefined }));
    return k;
  }

  #list(subject: string, k: Known): Promise<void> {
    k.listing ??= (async () => {
      const startedAt = Date.now();
      for (const v of await this.#registry.versions(subject)) {
        if (k.versions.has(v)) continue;
        k.ids.add((await this.#registry.version(subject, v)).id);
        k.versions.add(v);
      }
      k.listedAt = startedAt;
    })().finally(() => (k.listing = undefined));
    return k.listing;
  }
}
