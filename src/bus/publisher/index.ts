export { RecordPublisher } from './record-publisher.js';
export type { PublisherStats, RecordPublisherOptions } from './record-publisher.js';
export { Publisher, processRunId } from './publisher.js';
export type { PublishOptions, PublishReceipt, PublisherIdentity } from './publisher.js';
export { OutboundQueue } from './outbound-queue.js';
