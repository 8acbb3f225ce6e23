export { createKafkaTransport } from './kafka-transport.js';
export { resolveKafkaTransportOptions } from './options.js';
export type { KafkaSaslOptions, KafkaTransportInput, KafkaTransportOptions } from './options.js';
export { silentLogger } from './logging.js';
export type { KafkaLogLevel, TransportLogger } from './logging.js';
