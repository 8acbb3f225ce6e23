export { RecordPublisher } from './record-publisher.js';
export type { PublisherStats, RecordPublisherOptions } from './record-publisher.js';
export { DeliveredPosition, Publisher, processRunId } from './publisher.js';
export type { PositionJson, PublishOptions, PublishReceipt, PublishReceiptJson, PublisherIdentity } from './publisher.js';
export { OutboundQueue } from './outbound-queue.js';
export { prepareEvent, sourceOf } from './attributes.js';
export type { PreparedEvent } from './attributes.js';
