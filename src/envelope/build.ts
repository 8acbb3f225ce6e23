/**
 * Building envelopes: fresh ids and times for our own emissions, freezing, and copies with
 * changed attributes. Spec: CloudEvents 1.0.2 `id` (unique per source), bus spec M1 (fresh
 * messageId per emission), M5 (UTC instants), DESIGN "The envelope".
 */
import { randomUUID } from 'node:crypto';
import type { Attributes, AttributeValue, Envelope, EventData } from './types.js';
import { deepFreezeJson } from './json-value.js';
import { assertValidEnvelope, checkAttributes } from './validate.js';
import { ViolationCollector } from './violation.js';
import { nowRfc3339 } from './time.js';

/** A fresh event id (random UUID v4), for `id` and for a new `correlationid`. */
export function newEventId(): string {
  return randomUUID();
}

/**
 * Freezes the envelope, its attributes, its data wrapper and (for JSON data) the whole value,
 * in place; returns it. Binary bytes cannot be frozen (typed arrays), treat them as read-only.
 */
export function freezeEnvelope(env: Envelope): Envelope {
  Object.freeze(env.attributes);
  if (env.data !== undefined) {
    if (env.data.kind === 'json') deepFreezeJson(env.data.value);
    Object.freeze(env.data);
  }
  return Object.freeze(env);
}

/** What a caller supplies for a new emission; `id` and `time` default to fresh values. */
export type NewEnvelopeAttributes = Omit<Attributes, 'specversion' | 'id' | 'time'> & {
  readonly id?: string;
  readonly time?: string;
};

/**
 * A new, validated, frozen envelope for an event this process emits: `specversion` 1.0, `id`
 * fresh unless given, `time` now in UTC (`nowMs` epoch ms, default Date.now()) unless given.
 * Attributes whose value is undefined are left out.
 * Throws: GatewayError CEG_INVALID_ATTRIBUTE / CEG_MISSING_ATTRIBUTE / CEG_INVALID_DATA
 * (retriable false) as {@link assertValidEnvelope}.
 */
export function createEnvelope(attributes: NewEnvelopeAttributes, data?: EventData, nowMs?: number): Envelope {
  const attrs: Record<string, AttributeValue> = { specversion: '1.0', id: attributes.id ?? newEventId() };
  for (const name in attributes) {
    const v = attributes[name];
    if (v !== undefined && name !== 'id') attrs[name] = v;
  }
  if (attrs.time === undefined) attrs.time = nowRfc3339(nowMs);
  const env: Envelope = data === undefined ? { attributes: attrs as unknown as Attributes } : { attributes: attrs as unknown as Attributes, data };
  assertValidEnvelope(env);
  return freezeEnvelope(env);
}

/**
 * A validated, frozen copy of `env` with `patch` applied (undefined removes an attribute); data
 * is shared and not re-inspected. Used e.g. by ingress to fill `eventname`, `schemaversion`,
 * `partitionkey`.
 * Throws: GatewayError CEG_INVALID_ATTRIBUTE / CEG_MISSING_ATTRIBUTE (retriable false) naming
 * each attribute that the result breaks.
 */
export function withAttributes(env: Envelope, patch: Readonly<Record<string, AttributeValue | undefined>>): Envelope {
  const attrs: Record<string, AttributeValue> = {};
  for (const name in env.attributes) {
    const v = env.attributes[name];
    if (v !== undefined && !(name in patch)) attrs[name] = v;
  }
  for (const name in patch) {
    const v = patch[name];
    if (v !== undefined) attrs[name] = v;
  }
  const next: Envelope =
    env.data === undefined ? { attributes: attrs as unknown as Attributes } : { attributes: attrs as unknown as Attributes, data: env.data };
  const out = new ViolationCollector();
  checkAttributes(attrs, out);
  if (out.size > 0) throw out.toError();
  return freezeEnvelope(next);
}
