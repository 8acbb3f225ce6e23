export { subscribe, deadLetterTopic } from './subscriber.js';
export type { DeliveryContext, EventHandler, SubscribeOptions, Subscription } from './subscriber.js';
