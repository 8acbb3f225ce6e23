export { attributeBytesOf, toBinaryRecord, fromRecord, HEADER_PREFIX } from './binary.js';
export type { RecordEvent } from './binary.js';
