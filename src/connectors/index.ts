/**
 * Connectors: declarative subscriber adapters loaded from `connectors/*.yaml` — the operator
 * shell-hook sink and the file-drop sink (the original system's hook chain, now with delivery
 * guarantees and correlation).
 * Spec: DESIGN "Connectors"; bus spec "Migration Path".
 */
export * from './loader/index.js';
export * from './sinks/index.js';
export { JSON_CONTENT_TYPE, jsonView } from './event-view.js';
export { refuse, sinkOutcomes, toOutcome } from './outcome.js';
export type { SinkOutcome } from './outcome.js';
export { envNameProblem, isSecretLikeName, pathProblem, reservedGroupProblem, subscriptionNameProblem } from './names.js';
