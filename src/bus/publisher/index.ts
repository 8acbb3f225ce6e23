export { RecordPublisher, deliveryFate } from './record-publisher.js';
export type { DeliveryFate, PublisherStats, RecordPublisherOptions, SentBatch, Settled } from './record-publisher.js';
export { DeliveredPosition, Publisher, processRunId } from './publisher.js';
export type { PositionJson, PublishOptions, PublishReceipt, PublishReceiptJson, PublisherIdentity } from './publisher.js';
export { OutboundQueue } from './outbound-queue.js';
export { prepareEvent, sourceOf } from './attributes.js';
export type { PreparedEvent } from './attributes.js';
export { BATCH_HEADER_BYTES, recordBatchBytes } from './record-size.js';
