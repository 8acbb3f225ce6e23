export { createGateway } from './gateway.js';
export type { Gateway, GatewayOverrides, StartupProgress } from './gateway.js';
export { createBus, DEFAULT_START_TIMEOUT_MS } from './bus.js';
export type { CreateBusOptions } from './bus.js';
