export { EventCodec, AVRO_CONTENT_TYPE } from './event-codec.js';
export type { KindBinding, SchemaVersion } from './event-codec.js';
export type { Completion, OutboundEvent } from './complete.js';
export { TRACEPARENT_RESERVE, completeAttributes, completeOutbound, withReserved } from './complete.js';
