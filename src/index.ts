/**
 * ce-gateway as a library: the gateway (composition root), the publish and subscribe API, the
 * envelope types, the catalog and the errors. See README.md "Use as a library".
 */
export { createGateway, createBus, DEFAULT_START_TIMEOUT_MS } from './app/index.js';
export type { CreateBusOptions } from './app/index.js';
export { Bus, resolveBus, setDefaultBus, roles } from './bus/bus.js';
export type { Role, BusRemote, LocalHandler, BusPublishResult, BusSubscribeOptions } from './bus/bus.js';
// Typed API: `ce-gateway catalog generate` output augments EventKinds with the kinds of your catalog.
export type { EventKinds, RegisteredKindName, EventIdOfKind, KnownKind, KindNameOf, KindArg, DataOf, DataOfEach, ReceivedDataOf, ReceivedEnvelope, EventOf } from './catalog/kinds.js';
export type { Gateway } from './app/index.js';
export { loadConfig, environment } from './config/index.js';
export type { Config } from './config/index.js';
export { createLogger, silentLogger } from './observability/index.js';
export type { Logger } from './observability/index.js';
export { Publisher, processRunId } from './bus/publisher/index.js';
export type { PublishOptions, PublishReceipt, PublishReceiptJson, PositionJson } from './bus/publisher/index.js';
export { DeliveredPosition } from './bus/publisher/index.js';
export { deadLetterTopic, retryTopic, redriveTopic, ack, duplicate, retry, deadLetter, DEAD_LETTER_HEADERS, RETRY_HEADERS, REDRIVE_HEADERS } from './bus/subscriber/index.js';
export type { DeliveryContext, EventHandler, Ordering, Outcome, SubscribeOptions, Subscription, SubscriptionActivity, SubscriptionStats, IdempotencyOptions } from './bus/subscriber/index.js';
// Dead letters as a product and status (issue 10): what `ce-gateway deadletters` and the routes use.
export { DeadLetters, deadLetterStateTopic } from './bus/deadletters/index.js';
export type { DeadLetterItem, DeadLetterPage, PurgeResult, RedriveResult, Selection } from './bus/deadletters/index.js';
export { subscriptionLag } from './bus/status/index.js';
export type { PartitionLag, SubscriptionLag, SubscriptionStatus } from './bus/status/index.js';
export type { LocalReplayOptions, PartitionReport, ReplayReport, ReplayTo } from './bus/subscriptions/replay/index.js';
export { currentHandling } from './bus/correlation/index.js';
export { loadCatalog, partitionKey } from './catalog/index.js';
export type { Catalog, EventKind } from './catalog/index.js';
export { GatewayError, errorCodes, isGatewayError } from './core/errors.js';
export type { ErrorCode } from './core/errors.js';
export { retryPolicy } from './core/retry.js';
export type { RetryPolicy } from './core/retry.js';
export type { Envelope, Attributes, AttributeValue, EventData, JsonValue } from './envelope/types.js';
export { idempotent, idempotentPg, createMemoryIdempotencyStore, createPgIdempotencyStore } from './bus/idempotency/index.js';
export type {
  IdempotencyStore,
  IdempotencyKey,
  FinalOutcome,
  IdempotentOptions,
  IdempotentPgOptions,
  IdempotentHandler,
  IdempotentStats,
  TransactionalHandler,
  PgIdempotencyStore,
  MemoryIdempotencyStore,
} from './bus/idempotency/index.js';
export { ensureOutboxSchema, OutboxWriter, writeOutboxEvent, startOutboxRelay, outboxTable } from './bus/outbox/index.js';
export type { OutboxRelay, OutboxRelayOptions, OutboxRelayStats, OutboxReceipt, OutboxWriteOptions, OutboxWriterOptions, OutboxTable, EnsureOutboxSchemaOptions } from './bus/outbox/index.js';
export type { PublisherIdentity } from './bus/publisher/index.js';
export { loadConnectors, startConnectors, createShellHookSink, resolveShellHookOptions, createFileDropSink, resolveFileDropOptions } from './connectors/index.js';
export type {
  ConnectorDefinition,
  ConnectorHost,
  ConnectorProblem,
  ConnectorsHandle,
  LoadContext,
  ShellHookOptions,
  ShellHookSettings,
  FileDropOptions,
  FileDropSettings,
} from './connectors/index.js';
export * from './catalog/generated/index.js';
