/**
 * Dead letters as a product (issue 10): list, redrive and purge a subscription's dead letters by
 * its consumer group; the marks topic `<group>.dlq.state`; the listing's `after` token.
 */
export { DEFAULT_PAGE, DeadLetters, MAX_IDS, MAX_PAGE, deadLetterRefProblem, heldListingProblem, heldRedriveSkip } from './service.js';
export type { ActedOn, DeadLetterPage, DeadLetterRef, DeadLettersDeps, EventRef, NotFound, PurgeResult, RedriveResult, Selection } from './service.js';
export type { Coordinates, DeadLetterItem } from './item.js';
export { decodeCursor, encodeCursor } from './cursor.js';
export type { Cursor } from './cursor.js';
export { DeadLetterMarks, deadLetterStateTopic, deadLetterStateTopicSpec, readMarks } from './marks.js';
