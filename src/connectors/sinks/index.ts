/** Connector sinks: subscriber handlers that hand events to the outside world. */
export * from './shell-hook/index.js';
export * from './file-drop/index.js';
export { resolveFileDropOptions, resolveShellHookOptions } from './resolve.js';
