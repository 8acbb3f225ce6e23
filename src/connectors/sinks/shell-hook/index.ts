/** Shell-hook sink: an operator script per event (stdin JSON, `CE_*` environment, timeout, exit-code mapping). */
export { STOP_MARGIN_MS, createShellHookSink, hookFailureMessage, stopSchedule } from './sink.js';
export type { ShellHookSink, SinkStopOptions } from './sink.js';
export { DEFAULT_HOOK_PATH, shellHookOptionsFrom, shellHookSettingsSchema } from './options.js';
export type { ParsedShellHookSettings, ResolveContext, ShellHookOptions, ShellHookSettings } from './options.js';
export { EX_TEMPFAIL, classifyEnd, defaultExitCodePolicy, describeEnd, exitCodePolicy } from './exit-codes.js';
export type { ExitCodeOverrides, ExitCodePolicy } from './exit-codes.js';
export { MAX_ENV_VALUE_BYTES, buildHookEnv } from './env.js';
export type { HookEnvSettings } from './env.js';
export { runProcess, startProcess } from './run.js';
export type { ProcessEnd, ProcessResult, RunOptions, RunningProcess } from './run.js';
