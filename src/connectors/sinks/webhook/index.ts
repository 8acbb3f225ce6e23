/** The push (webhook) sink: target rules, signing, the validation handshake, one attempt, the sink. */
export { EMPTY_ALLOW_LIST, MAX_URL_LENGTH, addressProblem, checkTargetUrl, parseAllowList, parsePorts, resolveTarget, sinkName, systemLookup } from './target.js';
export type { AllowList, Lookup, ResolvedTarget, TargetUrl } from './target.js';
export { messageId, secretKey, signatureHeaders } from './signing.js';
export { handshakeHeaders, readHandshake } from './handshake.js';
export type { HandshakeAnswer } from './handshake.js';
export { DEFAULT_MAX_HANDSHAKES, HandshakeCache } from './handshakes.js';
export type { AcceptedHandshake, HandshakeKey } from './handshakes.js';
export { deliveryMessage, outgoingEnvelope } from './message.js';
export type { MessageOptions } from './message.js';
export { PinnedAgents, classify, retryAfterMs, send } from './deliver.js';
export type { AttemptResult, RawAnswer } from './deliver.js';
export { GONE_PARK_MS, createWebhookSink, refuseFragment, targetChecker } from './sink.js';
export type { PushSettings, WebhookSink, WebhookSinkDeps } from './sink.js';
