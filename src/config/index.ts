export { CONFIG_KEYS, SECRET_KEYS, checkConfig, loadConfig, secretVariable } from './config.js';
export type { Config, ConfigProblem } from './config.js';
export { environment, readEnvFile } from './env-file.js';
export { CONFIG_HELP } from './help.js';
