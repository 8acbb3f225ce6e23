/**
 * Strict CloudEvents 1.0 validation of an envelope: required attributes, names, types of known
 * and unknown attributes, ce-gateway's extension rules, and data that JSON can carry.
 * Spec: CloudEvents 1.0.2 "REQUIRED Attributes", "OPTIONAL Attributes", "Naming Conventions",
 * "Type System", "Extension Context Attributes"; DESIGN "The envelope (bus spec M1–M6)".
 */
import type { AttributeValue, Envelope } from './types.js';
import { attributeNameProblem, knownAttributes, requiredAttributes } from './attribute-types.js';
import { integerProblem, stringProblem, typeProblem } from './values.js';
import { inspectJson } from './json-value.js';
import { ViolationCollector } from './violation.js';
import type { Violation } from './violation.js';

const MISSING = 'required attribute is missing';

/**
 * Checks one attribute value (name already known to be legal) and adds violations to `out`.
 * Known attributes are checked against their declared type and rules; unknown extensions must
 * be a String, Boolean or Integer in their native form.
 */
export function checkAttribute(name: string, value: unknown, out: ViolationCollector): void {
  const rule = knownAttributes.get(name);
  if (rule === undefined) {
    let reason: string | undefined;
    if (typeof value === 'string') reason = stringProblem(value);
    else if (typeof value === 'number') reason = integerProblem(value);
    else if (typeof value !== 'boolean') reason = 'extension values must be a String, Integer or Boolean';
    if (reason !== undefined) out.attribute(name, reason);
    return;
  }
  if (name === 'specversion') {
    if (value !== '1.0') out.attribute(name, "must be '1.0' (this receiver implements CloudEvents 1.0)");
    return;
  }
  const reason = typeProblem(rule.type, value);
  if (reason !== undefined) {
    out.attribute(name, reason);
    return;
  }
  if (value === '' && rule.nonEmpty) {
    out.attribute(name, 'must be a non-empty string');
    return;
  }
  if (rule.check !== undefined) {
    const extra = rule.check(value as string | number);
    if (extra !== undefined) out.attribute(name, extra);
  }
}

/**
 * Attributes whose values repeat from event to event of one producer: a value found valid once is
 * remembered (bounded, cleared when full), so a consumer reading a stream checks it once. Only
 * valid results are remembered; an invalid value is checked, and reported, every time.
 */
const REPEATING = ['specversion', 'type', 'source', 'dataschema', 'datacontenttype', 'eventname', 'eventclass', 'runid', 'schemaversion'] as const;
/**
 * Per repeating attribute, the values found valid. A Set of the values themselves (not of
 * `name + type + value` strings, which cost a string per attribute per event): a Set tells '1'
 * from 1 and true from 'true' by itself.
 */
const validValues = new Map<string, Set<AttributeValue>>(REPEATING.map((n) => [n, new Set<AttributeValue>()]));
const validNames = new Set<string>();
const MAX_REMEMBERED = 4096;

function remember<T>(set: Set<T>, key: T): void {
  if (set.size >= MAX_REMEMBERED) set.clear();
  set.add(key);
}

/**
 * Validates an attribute map into `out`. Undefined values count as absent. Names are checked
 * before values; a bad name is reported once, its value is not inspected.
 */
export function checkAttributes(attributes: Readonly<Record<string, AttributeValue | undefined>>, out: ViolationCollector): void {
  for (const name in attributes) {
    const value = attributes[name];
    if (value === undefined) continue;
    if (!validNames.has(name)) {
      const nameProblem = attributeNameProblem(name);
      if (nameProblem !== undefined) {
        out.attribute(name, nameProblem);
        continue;
      }
      remember(validNames, name);
    }
    const memo = typeof value !== 'string' || value.length <= 512 ? validValues.get(name) : undefined;
    if (memo?.has(value) === true) continue;
    const before = out.items.length;
    checkAttribute(name, value, out);
    if (memo !== undefined && out.items.length === before) remember(memo, value);
  }
  for (const name of requiredAttributes) {
    if (attributes[name] === undefined) out.attribute(name, MISSING, 'missing');
  }
}

/** Validates `env` into `out`; shared by {@link validateEnvelope} and the codecs. */
export function checkEnvelope(env: Envelope, out: ViolationCollector): void {
  const attributes: unknown = (env as { attributes?: unknown } | null)?.attributes;
  if (typeof attributes !== 'object' || attributes === null) {
    out.field('/attributes', 'the envelope has no attributes object', 'event');
    return;
  }
  checkAttributes(attributes as Record<string, AttributeValue | undefined>, out);
  const data: unknown = env.data;
  if (data === undefined) return;
  const d = data as { kind?: unknown; value?: unknown; bytes?: unknown };
  if (d.kind === 'json') {
    if (d.value === undefined) out.field('/data', 'json data needs a value (null is allowed)');
    else inspectJson(d.value, '/data', false, (pointer, reason) => out.field(pointer, reason));
  } else if (d.kind === 'binary') {
    if (!(d.bytes instanceof Uint8Array)) out.field('/data', 'binary data must be a Uint8Array');
  } else {
    out.field('/data', "data.kind must be 'json' or 'binary'");
  }
}

/**
 * Every violation of `env` against CloudEvents 1.0 and ce-gateway's envelope rules, in a stable
 * order (attributes in insertion order, then missing required ones, then data). Empty = valid.
 * Never throws. Spec: see module header.
 */
export function validateEnvelope(env: Envelope): Violation[] {
  const out = new ViolationCollector();
  checkEnvelope(env, out);
  return out.items;
}
