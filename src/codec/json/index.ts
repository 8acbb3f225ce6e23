/**
 * The CloudEvents JSON event format 1.0.2 ⇄ envelope, independent of any transport binding:
 * strict JSON text (UTF-8, no duplicate member names), media types of JSON content, one event
 * object, a batch, and JSON data carried as bytes. The HTTP binding (structured and batched
 * content modes), the Kafka structured content mode and the connectors all use it.
 */
export type { JsonParse } from './json-text.js';
export { parseJsonText } from './json-text.js';
export type { MediaType } from './media-type.js';
export { BATCH_JSON, CLOUDEVENTS_PREFIX, STRUCTURED_JSON, charsetProblem, declaresJson, isJsonMediaType, parseMediaType } from './media-type.js';
export { BODY_FIELD, attributeNumberTexts, integerFormProblem, parseStructuredEvent, readEventBatch, readJsonData, readStructuredEvent } from './event-format.js';
export { cannotEncode, structuredJsonText, toStructuredJson } from './write.js';
