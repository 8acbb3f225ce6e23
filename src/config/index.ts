export { CONFIG_KEYS, SECRET_KEYS, loadConfig } from './config.js';
export type { Config } from './config.js';
export { environment, readEnvFile } from './env-file.js';
