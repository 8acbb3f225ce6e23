/**
 * The envelope: CloudEvent 1.0 attributes, validation, extension rules.
 * Spec: CloudEvents 1.0.2; DESIGN "The envelope (bus spec M1–M6)".
 */
export type { Attributes, AttributeValue, Envelope, EventData, JsonValue } from './types.js';
export type { Violation, ViolationKind } from './violation.js';
export { ViolationCollector, describeViolation, violationsError } from './violation.js';
export type { AttributeRule, AttributeType } from './attribute-types.js';
export { PARTITION_KEY_PATTERN, attributeNameProblem, attributeTypeOf, knownAttributes, requiredAttributes } from './attribute-types.js';
export {
  INT32_MAX,
  INT32_MIN,
  base64PaddingProblem,
  base64Problem,
  integerProblem,
  parseIntegerText,
  stringProblem,
  timestampProblem,
  typeProblem,
  uriProblem,
  uriPrefixProblem,
  uriReferenceProblem,
} from './values.js';
export { isRfc3339Timestamp } from './time.js';
export { MAX_JSON_DEPTH, escapePointerToken, inspectJson, unsafeNumberReason } from './json-value.js';
export { MAX_POINTER_CHARS, shortenPointer } from './pointer-text.js';
export type { MediaType, MediaTypeFault } from './media-type.js';
export { isMediaTypeFault, mediaTypeProblem, parseMediaType, readMediaType } from './media-type.js';
export { checkAttribute, checkAttributes, checkEnvelope, validateEnvelope } from './validate.js';
export type { ParsedAttribute } from './canonical.js';
export { canonicalString, parseAttribute, tryParseAttribute } from './canonical.js';
export type { EnvelopeLimits, LimitBreach } from './limits.js';
export { DEFAULT_ENVELOPE_LIMITS, attributeEntries, checkAttributeLimits, checkEnvelopeLimits, describeLimitBreach, limitBreachCode, limitBreachError } from './limits.js';
