/**
 * CloudEvents HTTP binding 1.0.2 ⇄ envelope: pure parsing (binary, structured, batched content
 * modes) and encoding, media types, header values, size bounds and RFC 9457 problems.
 */
export type { HttpHeaders } from './binary.js';
export { hasCeHeader, readBinaryEvent } from './binary.js';
export type { HttpMode, HttpParseOptions, ParsedHttpRequest } from './parse.js';
export { BatchViolationsError, headerValue, parseHttpRequest } from './parse.js';
export { BODY_FIELD, parseStructuredEvent, readStructuredEvent } from './structured.js';
export type { HttpMessage } from './encode.js';
export { toBatchHttp, toBinaryHttp, toStructuredHttp, toStructuredJson } from './encode.js';
export type { DecodedHeader } from './header-value.js';
export { decodeHeaderValue, encodeHeaderValue } from './header-value.js';
export type { MediaType } from './media-type.js';
export { BATCH_JSON, CLOUDEVENTS_PREFIX, STRUCTURED_JSON, declaresJson, isJsonMediaType, parseMediaType } from './media-type.js';
export type { JsonParse } from './json-text.js';
export { parseJsonText } from './json-text.js';
export { assertBodySize, batchTooLarge, payloadTooLarge } from './limits.js';
export type { Problem } from './problem.js';
export { problemContentType, problemStatus, problemTypePrefix, toProblem } from './problem.js';
