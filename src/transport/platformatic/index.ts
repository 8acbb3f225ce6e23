export { createPlatformaticTransport } from './platformatic-transport.js';
