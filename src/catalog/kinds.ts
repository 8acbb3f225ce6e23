/**
 * The event kinds a program knows at the type level (bus spec X1: publishers and subscribers use
 * the types generated from the model). The package declares {@link EventKinds} empty; the output
 * of `ce-gateway catalog generate` augments it with one member per kind of *your* catalog:
 *
 * ```ts
 * declare module 'ce-gateway' {
 *   interface EventKinds {
 *     readonly PriceLoadingCompleted: { readonly eventId: '78b8fd47-…'; readonly payload: PriceLoadingCompletedPayload; readonly received: PriceLoadingCompletedReceived };
 *   }
 * }
 * ```
 *
 * With kinds registered, `publish`, `onLocal`, `subscribe` and the outbox take a kind's name or
 * eventId and its generated payload type, hand handlers its received type, and refuse an unknown
 * kind literal at compile time. A kind name only known at run time (read from a file or a request)
 * is a plain `string`: accepted, with plain JSON data, and checked at run time. With nothing
 * registered every string is accepted with plain JSON data.
 */
import type { Attributes, Envelope, JsonValue } from '../envelope/types.js';

/**
 * Kind name → `{ eventId, payload, received }`. Empty here; augmented by generated code (see the
 * module comment). `payload` is the data a publisher sends, `received` the data a handler gets
 * (every member present), both natural JSON.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- filled by declaration merging
export interface EventKinds {}

/** Business names of the registered kinds (never when none are registered). */
export type RegisteredKindName = Extract<keyof EventKinds, string>;

/** eventId of the registered kind `N`. */
export type EventIdOfKind<N> = N extends RegisteredKindName ? (EventKinds[N] extends { readonly eventId: infer I extends string } ? I : never) : never;

/** A registered kind by business name or eventId (the CloudEvents `type`). */
export type KnownKind = RegisteredKindName | EventIdOfKind<RegisteredKindName>;

/** Business name of the registered kind named or identified by `K` (never for anything else). */
export type KindNameOf<K> = K extends RegisteredKindName
  ? K
  : { readonly [N in RegisteredKindName]: EventKinds[N] extends { readonly eventId: K } ? N : never }[RegisteredKindName];

/**
 * What a caller may pass as a kind: a {@link KnownKind}, or a `string` that is not a literal (a
 * name read at run time). Any other literal is a compile error whose message names it. With no
 * kinds registered, every string.
 */
export type KindArg<K extends string> = [RegisteredKindName] extends [never] ? K : K extends KnownKind ? K : string extends K ? K : `unknown event kind "${K}": not in EventKinds (run ce-gateway catalog generate)`;

/**
 * The payload type of each kind of `K`, as a union: the generated payload type of a known kind,
 * else plain JSON. What an in-process handler of `K` may be given (one of them).
 */
export type DataOfEach<K extends string> = string extends K
  ? JsonValue
  : K extends KnownKind
    ? EventKinds[KindNameOf<K>] extends { readonly payload: infer P } ? P : JsonValue
    : JsonValue;

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;

/**
 * Data a publisher sends for `K`: the generated payload type of a known kind, else plain JSON.
 * For a union of kinds (`k: 'A' | 'B'`, which one is known only at run time) the data must be
 * valid for every one of them (the intersection of their payloads): the union of them would let
 * A's data through for B, refused only at run time.
 */
export type DataOf<K extends string> = [K] extends [never] ? never : UnionToIntersection<K extends string ? { readonly data: DataOfEach<K> } : never> extends { readonly data: infer D } ? D : never;

/** Data a handler receives for `K`: the generated received type of a known kind, else plain JSON. */
export type ReceivedDataOf<K extends string> = string extends K
  ? JsonValue
  : K extends KnownKind
    ? EventKinds[KindNameOf<K>] extends { readonly received: infer R } ? R : JsonValue
    : JsonValue;

/**
 * An event of a known kind as a handler gets it: the envelope with `data` in natural JSON of the
 * kind's received type. `data` is absent only for an event without data (a tombstone, possible
 * on compacted topics alone).
 */
export interface ReceivedEnvelope<D> {
  readonly attributes: Attributes;
  readonly data?: { readonly kind: 'json'; readonly value: D };
}

/**
 * The event a handler of `K` receives: {@link ReceivedEnvelope} of each known kind of `K` (a union
 * when `K` is one), or the plain {@link Envelope} for kinds only known at run time.
 */
export type EventOf<K extends string> = string extends K ? Envelope : K extends KnownKind ? ReceivedEnvelope<ReceivedDataOf<K>> : Envelope;
