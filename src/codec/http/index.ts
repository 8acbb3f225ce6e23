/**
 * CloudEvents HTTP binding 1.0.2 ⇄ envelope: pure parsing (binary, structured, batched content
 * modes) and encoding, media types, header values, size bounds and RFC 9457 problems.
 */
export type { HttpHeaders } from './binary.js';
export { hasCeHeader, readBinaryEvent } from './binary.js';
export type { HttpMode, HttpParseOptions, ParsedHttpRequest } from './parse.js';
export { BatchViolationsError, headerValue, parseHttpRequest } from './parse.js';
// The JSON event format lives in codec/json; re-exported here for the HTTP binding's users.
export { BODY_FIELD, parseStructuredEvent, readStructuredEvent, structuredJsonText, toStructuredJson } from '../json/index.js';
export type { HttpMessage } from './encode.js';
export { toBatchHttp, toBinaryHttp, toStructuredHttp } from './encode.js';
export type { DecodedHeader } from './header-value.js';
export { decodeHeaderValue, encodeHeaderValue } from './header-value.js';
export type { JsonParse, MediaType } from '../json/index.js';
export { BATCH_JSON, CLOUDEVENTS_PREFIX, STRUCTURED_JSON, declaresJson, isJsonMediaType, parseJsonText, parseMediaType } from '../json/index.js';
export { assertBodySize, batchTooLarge, payloadTooLarge } from './limits.js';
export type { Problem } from './problem.js';
export { problemContentType, problemStatus, problemTypePrefix, toProblem } from './problem.js';
