/** Subscription status and operations by name (issue 10): lag from Kafka, this instance's counts, dead letters. */
export { existingTopicsLag, missedFirst, subscriptionLag, subscriptionLags } from './lag.js';
export type { LagTarget, PartitionLag, SubscriptionLag } from './lag.js';
export { SubscriptionOperations } from './operations.js';
export type { EarlierFigures, OperationsDeps, SubscriptionStatus, SubscriptionTarget } from './operations.js';
