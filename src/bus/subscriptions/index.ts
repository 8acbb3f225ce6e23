/**
 * Subscriptions as resources (issue 8): the model and its validation, the definitions store on a
 * compacted Kafka topic, start offsets resolved at create, sealed secrets, the service behind the
 * HTTP routes, and the reconciler that runs the desired set on every instance.
 */
export { DEFAULT_BATCH, MAX_CONCURRENCY, batchSchema, DEFAULT_OWNER, DEFAULT_PUSH_RETRY, GROUP_PREFIX, NAME_PATTERN, SECRET_PATTERN, commonFields, createSchema, fileFiltersSchema, deliverySchema, deliveryModeProblem, fieldPath, groupOf, pullDeliverySchema, pushDeliverySchema, extendedPartnerIds, reachesAnotherPartner, retrySchema, startSchema, states } from './model.js';
export type { BatchSettings, CreateInput, CreateRequest, Delivery, PullDelivery, PushDelivery, PushDeliveryInput, RetrySettings, SubscriptionState } from './model.js';
export { DEVELOPMENT_CURSOR_KEY_ENV, developmentCursorKey, developmentKey, generateWebhookSecret, parseSecretsKey, secretBox, secretsKeyDecision, secretsKeyMissing } from './secrets.js';
export type { SecretBox, SecretsKeyDecision } from './secrets.js';
export { commitPositions, commitStart, resolveStart, startTarget } from './start.js';
export { DEFAULT_SUBSCRIPTIONS_TOPIC, SubscriptionStore, subscriptionsTopicSpec } from './store.js';
export type { StoreListener } from './store.js';
export { MAX_RECORD_WRITES, writeOnNewest } from './record-write.js';
export type { RecordChange, RecordWriteOptions } from './record-write.js';
export { parseStored } from './stored.js';
export type { StoredPullDelivery, StoredPushDelivery, StoredStartAt, StoredSubscription } from './stored.js';
export { SubscriptionService, mergePatch, quotaExceeded, shadowingFile, viewOf } from './service.js';
export type { OpenedSecrets, ShadowingFile, SubscriptionServiceDeps, SubscriptionView } from './service.js';
export { DEFAULT_ON_DEMAND, PUSH_COMMIT, Reconciler } from './reconciler.js';
export type { MemberCounts, OnDemand, OnDemandOptions, RunSpec, RunningSink, SinkContext, SinkFactory, SubscribeHost } from './reconciler.js';
export { movedPast, pendingOf } from './pending.js';
export type { Pending } from './pending.js';
export { WorkCheck } from './work-check.js';
export type { OffsetsSource, WatchedGroup } from './work-check.js';
export * from './replay/index.js';
export { MAX_CURSOR_CHARS, MAX_PULL_BYTES, MAX_PULL_EVENTS, MAX_PULL_WAIT_MS, PullService, cursorSigner, deriveCursorKey } from './pull/index.js';
export type { CursorOwner, CursorSigner, PullAnswer, PullOptions, PullServiceDeps, PullSession, PullStats } from './pull/index.js';
export { splitReadable } from './readable.js';
export type { MayReadKind } from './readable.js';
