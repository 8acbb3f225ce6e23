export { subscribe, deadLetterTopic, retryTopic } from './subscriber.js';
export type { DeliveryContext, EventHandler, Ordering, SubscribeOptions, Subscription, SubscriptionStats } from './subscriber.js';
export { ack, retry, deadLetter } from './outcome.js';
export type { Outcome } from './outcome.js';
export type { RetryMeta, DeadLetterInfo } from './failure-headers.js';
