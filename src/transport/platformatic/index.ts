export { createPlatformaticTransport } from './lazy-transport.js';
