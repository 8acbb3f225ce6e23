/**
 * The CloudEvents type system and the attributes whose type ce-gateway knows, with the extra
 * rules this project adds to its own extensions. Built once at module load.
 * Spec: CloudEvents 1.0.2 §2.3 (naming), §2.3 "Type System", §3.1–3.2 (core attributes);
 * DESIGN "The envelope (bus spec M1–M6)".
 */
import { isMediaTypeFault, mediaTypeProblem, readMediaType } from './media-type.js';

/** The abstract types of CloudEvents 1.0.2 "Type System". */
export type AttributeType = 'Boolean' | 'Integer' | 'String' | 'Binary' | 'URI' | 'URI-reference' | 'Timestamp';

/** How one known attribute is checked. */
export interface AttributeRule {
  readonly type: AttributeType;
  /** Empty string refused (core `id`, `source`, `type`, `subject`, `dataschema`, and our extensions). */
  readonly nonEmpty: boolean;
  /** Extra rule on the value; returns the reason when broken. */
  readonly check?: (value: string | number) => string | undefined;
}

/** Longest `partitionkey`, characters (as a topic name: the key is held to the same rule). */
export const MAX_PARTITION_KEY_LENGTH = 249;
/** Kafka-safe record key charset for `partitionkey` (same charset as topic names). */
export const PARTITION_KEY_PATTERN = new RegExp(`^[A-Za-z0-9._-]{1,${MAX_PARTITION_KEY_LENGTH}}$`);
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_PARENT = '0000000000000000';

/** Registry versions start at 1 (bus spec M4: the version of the payload schema). */
function checkSchemaVersion(v: string | number): string | undefined {
  return typeof v === 'number' && v < 1 ? 'a schema registry version starts at 1' : undefined;
}
function checkPartitionKey(v: string | number): string | undefined {
  return PARTITION_KEY_PATTERN.test(String(v)) ? undefined : 'must match [A-Za-z0-9._-]{1,249} (it becomes the Kafka record key)';
}
function checkEventClass(v: string | number): string | undefined {
  return v === 'notification' || v === 'document' ? undefined : "must be 'notification' or 'document'";
}
function checkTraceparent(v: string | number): string | undefined {
  const s = String(v);
  if (s.length !== 55 || !TRACEPARENT.test(s)) return 'must be W3C traceparent 00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags> (lowercase)';
  if (s.startsWith(ZERO_TRACE, 3)) return 'trace-id must not be all zeros';
  if (s.startsWith(ZERO_PARENT, 36)) return 'parent-id must not be all zeros';
  return undefined;
}
/**
 * One media type (RFC 9110 §8.3.1, read by the gateway's one parser, media-type.ts, as the
 * Content-Type checks read it), each parameter at most once (RFC 6838 §4.3), not a list.
 */
function checkMediaType(v: string | number): string | undefined {
  const text = String(v);
  const read = readMediaType(text);
  if (!isMediaTypeFault(read)) return undefined;
  if (read.fault === 'malformed') return 'must be an RFC 2046 media type such as application/json';
  return mediaTypeProblem(text, 'datacontenttype');
}

const S = (nonEmpty: boolean, check?: AttributeRule['check']): AttributeRule =>
  Object.freeze(check === undefined ? { type: 'String', nonEmpty } : { type: 'String', nonEmpty, check });

/**
 * Known attributes: the CloudEvents core ones, the documented extensions we use (distributed
 * tracing, dataref) and ce-gateway's own. Unknown extensions take the type their value has.
 */
export const knownAttributes: ReadonlyMap<string, AttributeRule> = new Map<string, AttributeRule>([
  ['specversion', S(true)],
  ['id', S(true)],
  ['source', Object.freeze({ type: 'URI-reference', nonEmpty: true })],
  ['type', S(true)],
  ['datacontenttype', S(true, checkMediaType)],
  ['dataschema', Object.freeze({ type: 'URI', nonEmpty: true })],
  ['subject', S(true)],
  ['time', Object.freeze({ type: 'Timestamp', nonEmpty: true })],
  // ce-gateway extensions (DESIGN "The envelope").
  ['correlationid', S(true)],
  ['causationid', S(true)],
  ['runid', S(true)],
  ['eventname', S(true)],
  ['partitionkey', S(true, checkPartitionKey)],
  ['schemaversion', Object.freeze({ type: 'Integer', nonEmpty: true, check: checkSchemaVersion })],
  ['eventclass', S(true, checkEventClass)],
  // CloudEvents documented extensions: distributed tracing, dataref.
  ['traceparent', S(true, checkTraceparent)],
  ['tracestate', S(false)],
  ['dataref', Object.freeze({ type: 'URI-reference', nonEmpty: true })],
]);

/** The four attributes every CloudEvent carries. Spec: CloudEvents 1.0.2 "REQUIRED Attributes". */
export const requiredAttributes = ['specversion', 'id', 'source', 'type'] as const;

/** The declared type of `name`, or undefined for an extension ce-gateway does not know. */
export function attributeTypeOf(name: string): AttributeType | undefined {
  return knownAttributes.get(name)?.type;
}

const ATTRIBUTE_NAME = /^[a-z0-9]+$/;

/**
 * Reason when `name` is not a legal attribute name, else undefined. Names longer than 20
 * characters are accepted: that limit is only a SHOULD NOT, addressed to whoever names an
 * extension, and the CloudEvents JS SDK reads such names even in strict mode (README "HTTP API").
 * Spec: CloudEvents 1.0.2 "Attribute Naming Convention" (lowercase a–z, 0–9; `data` reserved).
 */
export function attributeNameProblem(name: string): string | undefined {
  // The known attributes are legal names (all but `data`, which is not among them): no pattern test for them.
  if (knownAttributes.has(name)) return undefined;
  // An empty member name (`"": …` in JSON, a bare `ce-` header) is named as such: the violation's `attribute` is "".
  if (name === '') return 'an empty attribute name: attribute names are one or more lowercase letters a-z and digits 0-9';
  if (!ATTRIBUTE_NAME.test(name)) return 'attribute names must consist of lowercase letters a-z and digits 0-9';
  if (name === 'data') return "'data' is reserved and cannot be an attribute name";
  return undefined;
}
