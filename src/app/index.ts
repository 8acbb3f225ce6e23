export { createGateway } from './gateway.js';
export type { Gateway } from './gateway.js';
export { createBus } from './bus.js';
