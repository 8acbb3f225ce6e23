export { createGateway } from './gateway.js';
export type { Gateway, GatewayOverrides } from './gateway.js';
export { createBus } from './bus.js';
