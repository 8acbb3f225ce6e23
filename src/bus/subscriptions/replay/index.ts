/**
 * Replay by offset reset (issue 9): the request and its target, the plan (from, to, events per
 * partition), the reset once the group has no member, the coordination of HTTP subscriptions
 * through their stored state, the audit log, and the replay of this process's own members.
 */
export { MAX_REPLAY_ENTRY_BYTES, MAX_REPLAY_PARTITIONS, invalidReplay, parsePartitionKey, parseReplayRequest, parseTarget, partitionKey, verbatimTo } from './target.js';
export type { ReplayRequest, ReplayTarget, ReplayTo } from './target.js';
export { partialPlanOf, planOf, positionsOf, resolveTarget } from './plan.js';
export type { NotMovedReport, PartitionReport, ReplayOffsets, ReplayPlan } from './plan.js';
export { commitWhenIdle } from './reset.js';
export type { CommitProgress } from './reset.js';
export { replayHolds, replayPhases, replayStatus, storedReplaySchema } from './state.js';
export type { ReplayPhase, StoredReplay } from './state.js';
export { BackgroundAuditWrites, MAX_AUDIT_ENTRIES, ReplayAuditWriter, ReplayLog, failureOf, replayAuditTopicOf, replayAuditTopicSpec, replayOutcomes } from './audit.js';
export type { ReplayAnswer, ReplayAuditEntry, ReplayAuditSink, ReplayFailure, ReplayOutcome } from './audit.js';
export { REPLAY_LEASE_MS, ReplayCoordinator } from './coordinator.js';
export { MAX_STATE_WRITES, deletedDuringReplay, storeReplayState } from './state-write.js';
export type { ReplayCoordinatorDeps } from './coordinator.js';
export { RestartableSubscription } from './restartable.js';
export type { MemberStarter } from './restartable.js';
export { replayLocal } from './local.js';
export type { LocalReplayAudit, LocalReplayOptions, ReplayReport } from './local.js';
