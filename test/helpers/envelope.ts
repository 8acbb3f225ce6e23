/**
 * Envelopes for tests: a validated, frozen envelope from the attributes a test cares about.
 * Production code never builds envelopes this way (the publisher and ingress complete their own).
 */
import { randomUUID } from 'node:crypto';
import { ViolationCollector, checkEnvelope } from '../../src/envelope/index.js';
import type { Attributes, AttributeValue, Envelope, EventData } from '../../src/envelope/index.js';

/** Attributes a test supplies; `id` and `time` default to fresh values, undefined ones are left out. */
export type TestAttributes = Omit<Attributes, 'specversion' | 'id' | 'time'> & { readonly id?: string; readonly time?: string };

/**
 * `specversion` 1.0, `id` a fresh UUID unless given, `time` now (or `nowMs`) in UTC unless given;
 * validated and frozen (JSON data deeply). Throws the envelope's GatewayError
 * (CEG_INVALID_ATTRIBUTE, CEG_MISSING_ATTRIBUTE, CEG_INVALID_DATA) for an invalid one.
 */
export function createEnvelope(attributes: TestAttributes, data?: EventData, nowMs: number = Date.now()): Envelope {
  const attrs: Record<string, AttributeValue> = { specversion: '1.0', id: attributes.id ?? randomUUID() };
  for (const name in attributes) {
    const v = attributes[name];
    if (v !== undefined && name !== 'id') attrs[name] = v;
  }
  attrs.time ??= new Date(nowMs).toISOString();
  const env: Envelope = data === undefined ? { attributes: attrs as unknown as Attributes } : { attributes: attrs as unknown as Attributes, data };
  const out = new ViolationCollector();
  checkEnvelope(env, out);
  if (out.size > 0) throw out.toError();
  return deepFreeze(env);
}

/** Freezes a value and everything it holds (typed arrays cannot be frozen and are left as they are). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !ArrayBuffer.isView(value) && !Object.isFrozen(value)) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
