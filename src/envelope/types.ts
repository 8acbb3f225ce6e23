/**
 * The envelope: one CloudEvent 1.0 as the bus carries it between codecs, bus and transport.
 * Spec: CloudEvents 1.0.2 §3 (context attributes), DESIGN.md "The envelope (bus spec M1–M6)".
 */

/** A JSON value as `JSON.parse` yields it. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/**
 * A context attribute value in its CloudEvents type: Boolean → boolean, Integer → number (signed
 * 32-bit, CloudEvents §3.1.1 type system), everything else (String, URI, URI-reference, Timestamp,
 * Binary as base64) → string.
 */
export type AttributeValue = string | number | boolean;

/** Core attributes plus extensions. Names are lowercase a–z0–9 (CloudEvents §3.1.1). */
export interface Attributes {
  readonly specversion: '1.0';
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly datacontenttype?: string;
  readonly dataschema?: string;
  readonly subject?: string;
  /** RFC 3339 instant with an offset, kept verbatim (bus spec M5). */
  readonly time?: string;
  readonly [extension: string]: AttributeValue | undefined;
}

/**
 * Event data. `json`: the natural JSON form (what partners send and handlers receive; see
 * codec/data for the Avro mapping). `binary`: exact bytes (structured mode `data_base64`, or a
 * binary-mode body whose media type is not JSON).
 */
export type EventData =
  | { readonly kind: 'json'; readonly value: JsonValue }
  | { readonly kind: 'binary'; readonly bytes: Uint8Array };

/** One CloudEvent. `data` absent = an event without data (a Kafka tombstone). Frozen once built. */
export interface Envelope {
  readonly attributes: Attributes;
  readonly data?: EventData;
}
