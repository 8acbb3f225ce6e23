/**
 * Accepted validation handshakes of one gateway process, kept across the push sinks it builds: the
 * reconciler builds a new sink every time a subscription's member starts (after an idle stop, a
 * restart, a revival), and the handshake is owed once per URL and instance, not once per member.
 *
 * An acceptance is reused only for the same
 * - subscription — its group and its incarnation (the stored `createdAt`): a subscription deleted
 *   and created again under the same name asks again, and one subscription's acceptance (and the
 *   rate the sink granted it) is never another's;
 * - URL (the full stored text, query included);
 * - `WebHook-Request-Origin` and requested rate (the `WebHook-Request-Rate` value, or none): the
 *   sink agreed to those, so a changed `rateLimit` asks again.
 * What drops entries: {@link HandshakeCache.keepOnly} when a sink of the subscription is built or
 * its URL changes (only the current URL's entries stay: a PATCH back to an earlier URL asks again,
 * as the docs promise "again after the URL changes"); {@link HandshakeCache.forget} when the sink
 * answers 410 (a revived subscription asks again on this instance); and the size bound: past
 * `maxEntries` the least recently used entry goes (the only cost of an eviction is one more
 * OPTIONS request). A deleted subscription's entries are not dropped at once; they age out.
 * Spec: CloudEvents Web Hooks 1.0.2 §4 (abuse protection: validation before delivery; §4.1.2
 *   WebHook-Request-Rate, §4.2.2 WebHook-Allowed-Rate).
 */

/** What an accepted handshake granted. */
export interface AcceptedHandshake {
  /** Granted rate, requests per second; undefined = no limit granted. */
  readonly allowedPerSecond?: number;
}

/** What one acceptance is valid for (see the module comment). */
export interface HandshakeKey {
  /** The subscription's group and incarnation, e.g. `ce-gateway.sub.anonymous.orders@2026-01-02T03:04:05.000Z`. */
  readonly subscription: string;
  readonly url: string;
  /** `WebHook-Request-Origin` sent. */
  readonly origin: string;
  /** `WebHook-Request-Rate` sent (requests per minute, as text), or null when none was asked. */
  readonly requestedRate: string | null;
}

/** Entries kept at most by default: thousands of subscriptions, a few hundred bytes each. */
export const DEFAULT_MAX_HANDSHAKES = 4096;

/**
 * Accepted handshakes, least recently used first (a Map keeps insertion order), with the keys of
 * each subscription beside them so that dropping one subscription's entries does not scan them all.
 */
export class HandshakeCache {
  readonly #max: number;
  readonly #entries = new Map<string, { readonly key: HandshakeKey; readonly value: AcceptedHandshake }>();
  readonly #bySubscription = new Map<string, Set<string>>();

  /** Errors: RangeError when `maxEntries` is not a positive integer. */
  constructor(maxEntries = DEFAULT_MAX_HANDSHAKES) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    this.#max = maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The acceptance for `key`, or undefined; a hit counts as a use (it moves to the young end). */
  get(key: HandshakeKey): AcceptedHandshake | undefined {
    const k = text(key);
    const e = this.#entries.get(k);
    if (e === undefined) return undefined;
    this.#entries.delete(k);
    this.#entries.set(k, e);
    return e.value;
  }

  /** Records an acceptance; the least recently used entry goes when the bound is passed. */
  set(key: HandshakeKey, value: AcceptedHandshake): void {
    const k = text(key);
    this.#entries.delete(k);
    this.#entries.set(k, { key, value });
    let keys = this.#bySubscription.get(key.subscription);
    if (keys === undefined) this.#bySubscription.set(key.subscription, (keys = new Set()));
    keys.add(k);
    while (this.#entries.size > this.#max) this.#drop(this.#entries.keys().next().value!);
  }

  /** Drops every entry of `subscription` (the sink answered 410). */
  forget(subscription: string): void {
    for (const k of [...(this.#bySubscription.get(subscription) ?? [])]) this.#drop(k);
  }

  /** Drops the entries of `subscription` for any URL other than `url` (a sink is built, or its URL changed). */
  keepOnly(subscription: string, url: string): void {
    for (const k of [...(this.#bySubscription.get(subscription) ?? [])]) if (this.#entries.get(k)?.key.url !== url) this.#drop(k);
  }

  #drop(k: string): void {
    const e = this.#entries.get(k);
    if (e === undefined) return;
    this.#entries.delete(k);
    const keys = this.#bySubscription.get(e.key.subscription);
    keys?.delete(k);
    if (keys?.size === 0) this.#bySubscription.delete(e.key.subscription);
  }
}

const text = (k: HandshakeKey): string => JSON.stringify([k.subscription, k.url, k.origin, k.requestedRate]);
