import type { TopicSpec } from './port.js';

/**
 * The topics a Kafka adapter has seen exist (listed or created by its `ensureTopics`), each
 * remembered for `maxAgeMs` (ms; Kafka's `metadata.max.age.ms`), so `ensureTopics` asks the broker
 * only about the others. Listing every topic of a cluster is the only lookup that does not fail on
 * a missing topic, and it grows with the cluster: 186 ms and ~5,700 topics on the dev stack, for
 * every `POST /subscriptions` (each ensures its dead-letter topic). A topic deleted behind the
 * gateway's back is created again by the first `ensureTopics` after its entry ages out, or at once
 * after a produce to it failed as unknown (`forget`). Shared by both Kafka adapters.
 * Bounded: an entry older than `maxAgeMs` means nothing any more and is dropped at the next
 * `exist` at least `maxAgeMs` after the previous sweep, so the map holds the topics seen within
 * the last two `maxAgeMs` — not every topic the process ever saw (a long-running gateway under
 * subscription churn saw each deleted subscription's `.dlq`, `.redrive` and `.retry` once, and
 * kept them all, deleted from the broker or not).
 */
export class KnownTopics {
  readonly #seenAtMs = new Map<string, number>();
  readonly #maxAgeMs: number;
  #sweptAtMs = Date.now();

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

  /** Topics remembered now (expired entries not swept yet included). */
  get size(): number {
    return this.#seenAtMs.size;
  }

  /** Topics that exist now (listed, or created). Cost: one pass over the entries at most once per `maxAgeMs`. */
  exist(names: Iterable<string>): void {
    const now = Date.now();
    if (now - this.#sweptAtMs > this.#maxAgeMs) {
      this.#sweptAtMs = now;
      for (const [n, at] of this.#seenAtMs) if (now - at > this.#maxAgeMs) this.#seenAtMs.delete(n);
    }
    for (const n of names) this.#seenAtMs.set(n, now);
  }

  /** A topic the broker called unknown: asked about again next time. */
  forget(name: string): void {
    this.#seenAtMs.delete(name);
  }
}
