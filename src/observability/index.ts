export { createLogger, silentLogger, redactPaths } from './logger.js';
export type { Logger } from './logger.js';
