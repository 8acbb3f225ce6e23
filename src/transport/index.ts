/**
 * The transport module: the port (bytes + headers, partitions, offsets, groups), the
 * Java-compatible partitioner, and the adapters (memory: embedded default; Kafka on kafkajs or on
 * @platformatic/kafka, chosen with KAFKA_CLIENT).
 */
export type * from './port.js';
export { murmur2, partitionForKey, toPositive } from './partitioner.js';
export { createMemoryTransport } from './memory/index.js';
export type { MemoryTransportOptions } from './memory/index.js';
export { createKafkaTransport, resolveKafkaTransportOptions, silentLogger } from './kafka/index.js';
export type { KafkaLogLevel, KafkaSaslOptions, KafkaTransportInput, KafkaTransportOptions, TransportLogger } from './kafka/index.js';
export { createPlatformaticTransport } from './platformatic/index.js';
