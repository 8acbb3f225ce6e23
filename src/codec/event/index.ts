export { EventCodec, AVRO_CONTENT_TYPE } from './event-codec.js';
export type { KindBinding, SchemaVersion } from './event-codec.js';
export type { Completion, OutboundEvent } from './complete.js';
export { completeAttributes, completeOutbound } from './complete.js';
