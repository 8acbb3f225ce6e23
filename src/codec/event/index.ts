export { EventCodec, AVRO_CONTENT_TYPE } from './event-codec.js';
export type { KindBinding, SchemaVersion } from './event-codec.js';
