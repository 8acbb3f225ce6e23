import type { TopicSpec } from './port.js';

/**
 * The topics a Kafka adapter has seen exist (listed or created by its `ensureTopics`), each
 * remembered for `maxAgeMs` (ms; Kafka's `metadata.max.age.ms`), so `ensureTopics` asks the broker
 * only about the others. Listing every topic of a cluster is the only lookup that does not fail on
 * a missing topic, and it grows with the cluster: 186 ms and ~5,700 topics on the dev stack, for
 * every `POST /subscriptions` (each ensures its dead-letter topic). A topic deleted behind the
 * gateway's back is created again by the first `ensureTopics` after its entry ages out, or at once
 * after a produce to it failed as unknown (`forget`). Shared by both Kafka adapters.
 */
export class KnownTopics {
  readonly #seenAtMs = new Map<string, number>();
  readonly #maxAgeMs: number;

  constructor(maxAgeMs: number) {
    this.#maxAgeMs = maxAgeMs;
  }

  /** The specs whose topic is not known to exist (or was seen longer than `maxAgeMs` ago). */
  unknown(specs: readonly TopicSpec[]): readonly TopicSpec[] {
    const now = Date.now();
    return specs.filter((s) => {
      const at = this.#seenAtMs.get(s.name);
      return at === undefined || now - at > this.#maxAgeMs;
    });
  }

  /** Topics that exist now (listed, or created). */
  exist(names: Iterable<string>): void {
    const now = Date.now();
    for (const n of names) this.#seenAtMs.set(n, now);
  }

  /** A topic the broker called unknown: asked about again next time. */
  forget(name: string): void {
    this.#seenAtMs.delete(name);
  }
}
