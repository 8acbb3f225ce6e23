/**
 * The transport module: the port (bytes + headers, partitions, offsets, groups), the
 * Java-compatible partitioner, and the two adapters (memory: embedded default; kafka: kafkajs).
 */
export type * from './port.js';
export { murmur2, partitionForKey, toPositive } from './partitioner.js';
export { createMemoryTransport } from './memory/index.js';
export type { MemoryTransportOptions } from './memory/index.js';
export { createKafkaTransport, resolveKafkaTransportOptions, silentLogger } from './kafka/index.js';
export type { KafkaLogLevel, KafkaSaslOptions, KafkaTransportInput, KafkaTransportOptions, TransportLogger } from './kafka/index.js';
