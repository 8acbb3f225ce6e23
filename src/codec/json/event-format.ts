/**
 * The CloudEvents JSON event format: one JSON object ⇄ envelope, and JSON data read from bytes.
 * Used by every binding that carries it: HTTP structured and batched content modes, the Kafka
 * structured content mode, and the connectors (which hand events on as JSON).
 * Spec: CloudEvents JSON format 1.0.2 §2.2 (type mapping; null = unset), §3 (envelope),
 * §3.1.1 (data / data_base64 serialization), §3.1.2 (deserialization), §4 (batch).
 */
import type { Attributes, AttributeValue, EnvelopeLimits, Envelope, EventData, JsonValue } from '../../envelope/index.js';
import {
  DEFAULT_ENVELOPE_LIMITS,
  ViolationCollector,
  attributeNameProblem,
  attributeTypeOf,
  base64Problem,
  checkAttributeLimits,
  checkAttribute,
  describeLimitBreach,
  inspectJson,
  limitBreachCode,
  parseIntegerText,
  requiredAttributes,
  unsafeNumberReason,
} from '../../envelope/index.js';
import { declaresJson } from './media-type.js';
import { eventNumberTexts, parseJsonText } from './json-text.js';

/** Field name used for violations about the request body (or record value) as a whole. */
export const BODY_FIELD = 'body';
const MISSING = 'required attribute is missing';
const utf8 = new TextEncoder();
/** Members of an event object that are not attributes (JSON format §3). */
const DATA_MEMBERS = 2;
/** A JSON number written as an Integer: only the integer part, optionally with a minus sign. */
const JSON_INTEGER = /^-?(?:0|[1-9][0-9]*)$/;
const SHOWN_NUMBER = 40;

/**
 * Why `text`, the JSON number an attribute was written as, is not an Integer in the JSON format,
 * or undefined. JSON.parse reads `1.0`, `1E2`, `2.50e1` as 1, 100, 25: without this they were
 * accepted and forwarded as "1", "100", "25". `-0` is written as the format allows (the integer
 * part `0` prefixed with a minus sign) and is the Integer 0 (32-bit two's complement has no
 * negative zero), delivered as "0"; `-0.0` is refused like `0.0`.
 * Spec: CloudEvents JSON format 1.0.2 §2.2 (Integer: "a JSON number where only the integer
 * component optionally prefixed with a minus sign is permitted"); RFC 8259 §6 (`[ minus ] int`).
 */
export function integerFormProblem(text: string): string | undefined {
  if (JSON_INTEGER.test(text)) return undefined;
  const shown = text.length > SHOWN_NUMBER ? `${text.slice(0, SHOWN_NUMBER)}…` : text;
  const n = Number(text);
  const instead = Number.isSafeInteger(n) ? `; write it as ${String(n)}` : '';
  return `an Integer attribute is a JSON number with only an integer part, optionally prefixed with a minus sign — no fraction or exponent (JSON format 1.0.2 §2.2): got ${shown}${instead}`;
}

/**
 * The source text of the numbers the events' attributes were written as (event index → name →
 * text), for {@link readStructuredEvent}'s `numberTexts`; undefined when no event has an
 * attribute that is a JSON number (then the text is not scanned). `json` is the text (or UTF-8
 * bytes) `value` was parsed from by parseJsonText; `batch`: `value` is an array of events.
 * Cost: one linear pass over the text, only when some attribute is a number.
 */
export function attributeNumberTexts(json: string | Uint8Array, value: unknown, batch: boolean): ReadonlyMap<number, ReadonlyMap<string, string>> | undefined {
  const events = batch ? (Array.isArray(value) ? (value as unknown[]) : []) : [value];
  if (!events.some(hasNumberAttribute)) return undefined;
  let text = typeof json === 'string' ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  return eventNumberTexts(text, batch);
}

function hasNumberAttribute(event: unknown): boolean {
  if (typeof event !== 'object' || event === null || Array.isArray(event)) return false;
  const obj = event as Record<string, unknown>;
  for (const key in obj) if (typeof obj[key] === 'number' && key !== 'data') return true;
  return false;
}

/**
 * Reads one JSON-format event into a frozen envelope, adding every violation to `out` (stamped
 * with `out.index` in a batch). Returns undefined when this event had any violation.
 * `whole` is the field that names the event itself (`body`, or its JSON pointer `/<index>` in a batch,
 * RFC 6901 §5).
 * Attributes: a known Integer attribute (`schemaversion`) is accepted as a JSON number or as the
 * canonical string of an Integer (`"1"`), as binary mode carries it.
 * Limits: more attributes than `limits.maxAttributes`, or more bytes of names and canonical values
 * than `limits.maxAttributeBytes`, is one violation coded CEG_TOO_MANY_ATTRIBUTES /
 * CEG_ATTRIBUTES_TOO_LARGE; the count is checked before any attribute is looked at, so the cost of
 * a refused event does not grow with its attributes.
 * `numberTexts` (name → source text, from {@link attributeNumberTexts}): an attribute written as a
 * JSON number with a fraction or exponent (`1.0`, `1E2`) is refused naming it ({@link integerFormProblem});
 * without it (a value not read from JSON text) the form is not known and not checked.
 */
export function readStructuredEvent(obj: unknown, out: ViolationCollector, whole: string = BODY_FIELD, limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS, numberTexts?: ReadonlyMap<string, string>): Envelope | undefined {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    out.field(whole, 'a structured CloudEvent must be a JSON object', 'event');
    return undefined;
  }
  const src = obj as Record<string, unknown>;
  const members = Object.keys(src).length;
  if (members > limits.maxAttributes + DATA_MEMBERS) {
    const breach = { limit: 'maxAttributes' as const, max: limits.maxAttributes, actual: members - (Object.hasOwn(src, 'data') ? 1 : 0) - (Object.hasOwn(src, 'data_base64') ? 1 : 0) };
    if (breach.actual > limits.maxAttributes) {
      out.coded(limitBreachCode(breach), { field: whole }, describeLimitBreach(breach), { limit: breach.limit, max: breach.max, actual: breach.actual });
      return undefined;
    }
  }
  const before = out.size;
  const attrs: Record<string, AttributeValue> = {};
  let hasData = false;
  let dataValue: unknown;
  let base64: string | undefined;
  for (const key in src) {
    let v = src[key];
    if (key === 'data') {
      hasData = true;
      dataValue = v;
      continue;
    }
    if (key === 'data_base64') {
      if (v === null) continue;
      if (typeof v === 'string') base64 = v;
      else out.field('/data_base64', 'must be a base64 string');
      continue;
    }
    if (v === null || v === undefined) continue; // JSON format §2.2: null = unset
    const nameProblem = attributeNameProblem(key);
    if (nameProblem !== undefined) {
      out.attribute(key, nameProblem);
      continue;
    }
    if (typeof v === 'object') {
      out.attribute(key, 'attribute values must be a String, Integer or Boolean, not a JSON object or array');
      continue;
    }
    if (typeof v === 'number' && Number.isSafeInteger(v)) {
      // JSON format §2.2: an Integer is written without fraction or exponent (the parsed value cannot tell).
      const written = numberTexts?.get(key);
      const form = written === undefined ? undefined : integerFormProblem(written);
      if (form !== undefined) {
        out.attribute(key, form);
        continue;
      }
    }
    if (typeof v === 'string' && attributeTypeOf(key) === 'Integer') {
      // The canonical string of an Integer is the same value (CloudEvents "Type System").
      const n = parseIntegerText(v);
      if (n !== undefined) v = n;
    }
    if (typeof v === 'number') {
      const unsafe = unsafeNumberReason(v);
      if (unsafe !== undefined) {
        out.attribute(key, unsafe);
        continue;
      }
    }
    attrs[key] = v as AttributeValue;
    checkAttribute(key, v, out);
  }
  for (const name of requiredAttributes) {
    if (attrs[name] === undefined && src[name] == null) out.attribute(name, MISSING, 'missing');
  }
  if (out.size === before) {
    const breach = checkAttributeLimits(attrs, limits);
    if (breach !== undefined) {
      out.coded(limitBreachCode(breach), { field: whole }, describeLimitBreach(breach), { limit: breach.limit, max: breach.max, actual: breach.actual });
      return undefined;
    }
  }
  let data: EventData | undefined;
  if (base64 !== undefined) {
    if (hasData) out.field('/data_base64', 'data and data_base64 cannot both be present');
    else {
      const problem = base64Problem(base64);
      if (problem !== undefined) out.field('/data_base64', problem);
      else {
        const buf = Buffer.from(base64, 'base64');
        data = Object.freeze({ kind: 'binary', bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength) });
      }
    }
  } else if (hasData) {
    const ct = attrs.datacontenttype;
    if (declaresJson(typeof ct === 'string' ? ct : undefined)) {
      inspectJson(dataValue, '/data', true, (pointer, reason) => out.field(pointer, reason));
      data = Object.freeze({ kind: 'json', value: dataValue as JsonValue });
    } else if (typeof dataValue === 'string') {
      // JSON format §3.1.2: non-JSON content travels as a string encoded per datacontenttype;
      // kept as its UTF-8 bytes so binary and structured mode give the same envelope.
      data = Object.freeze({ kind: 'binary', bytes: utf8.encode(dataValue) });
    } else {
      out.field('/data', 'with a non-JSON datacontenttype, data must be a string (or send the bytes as data_base64)');
    }
  }
  if (out.size > before) return undefined;
  const attributes = Object.freeze(attrs) as unknown as Attributes;
  return Object.freeze(data === undefined ? { attributes } : { attributes, data });
}

/**
 * JSON data carried as bytes — an HTTP binary-mode body, or `data_base64` whose
 * `datacontenttype` declares JSON — held to the rules of a JSON body: UTF-8 (checked, never
 * replaced), a leading BOM ignored, no duplicate member names, numbers JSON can carry, bounded
 * nesting. The value is deep-frozen. `pointer` names the data (`/data`, `/data_base64`).
 * Returns the value, or adds violations to `out` and returns undefined.
 * Spec: RFC 8259 §4, §8.1; JSON format 1.0.2 §3.1.1 (JSON-formatted content = `*\/json`, `*\/*+json`).
 */
export function readJsonData(bytes: Uint8Array, pointer: string, declared: string, out: ViolationCollector): { readonly value: JsonValue } | undefined {
  const parsed = parseJsonText(bytes);
  if (!parsed.ok) {
    out.field(parsed.pointer === undefined ? pointer : `${pointer}${parsed.pointer}`, `the data is declared ${declared} but is ${parsed.reason}`);
    return undefined;
  }
  const problems = inspectJson(parsed.value, pointer, true, (p, reason) => out.field(p, reason));
  return problems > 0 ? undefined : { value: parsed.value as JsonValue };
}

/**
 * One JSON-format event (text or UTF-8 bytes) → a validated, frozen envelope.
 * Throws: GatewayError (retriable false) CEG_INVALID_EVENT (not JSON, duplicate member names, not
 * an object), CEG_MISSING_ATTRIBUTE, CEG_INVALID_ATTRIBUTE, CEG_INVALID_DATA, CEG_TOO_MANY_ATTRIBUTES
 * or CEG_ATTRIBUTES_TOO_LARGE (over `limits`, default {@link DEFAULT_ENVELOPE_LIMITS});
 * `details.violations` lists every violation. Spec: CloudEvents JSON format 1.0.2 §2–§3.
 */
export function parseStructuredEvent(json: string | Uint8Array, limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS): Envelope {
  const out = new ViolationCollector();
  const parsed = parseJsonText(json);
  if (!parsed.ok) {
    out.field(parsed.pointer ?? BODY_FIELD, parsed.reason, 'event');
    throw out.toError();
  }
  const env = readStructuredEvent(parsed.value, out, BODY_FIELD, limits, attributeNumberTexts(json, parsed.value, false)?.get(0));
  if (env === undefined) throw out.toError();
  return env;
}

/**
 * A JSON batch (JSON format §4: an array of event objects) → its events by index; an event with
 * violations leaves a hole and its violations in `out`, stamped with its index.
 * The caller checks the array's length against its own bound first. `numberTexts`: by index, as
 * {@link attributeNumberTexts} gives them (the form of numeric attributes; JSON format §2.2).
 */
export function readEventBatch(items: readonly unknown[], out: ViolationCollector, limits: EnvelopeLimits = DEFAULT_ENVELOPE_LIMITS, numberTexts?: ReadonlyMap<number, ReadonlyMap<string, string>>): (Envelope | undefined)[] {
  const events = new Array<Envelope | undefined>(items.length);
  for (let i = 0; i < items.length; i++) {
    out.index = i;
    // The entry itself (not an object, too many attributes) is named by its pointer in the body.
    events[i] = readStructuredEvent(items[i], out, `/${i}`, limits, numberTexts?.get(i));
  }
  out.index = undefined;
  return events;
}
