export { startTail } from './tail.js';
export type { RecordAt, TailItem, TailOptions } from './tail.js';
