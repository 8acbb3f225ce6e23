/** The catalog: the model of event kinds (DESIGN "The model is the schema registry"). */
export type { Catalog, CatalogProblem, EventClass, EventKind, SubjectStrategy } from './types.js';
export { CATALOG_FILE, defaultCatalogDir, loadCatalog, readCatalogFile } from './load.js';
export { MAX_NOTIFICATION_BYTES, parseCatalog } from './parse.js';
export { looseKinds } from './loose.js';
export type { LooseKind } from './loose.js';
export type { SchemaReader } from './parse.js';
export { partitionKey, sanitizeKeyPart } from './partition-key.js';
export { publicCatalog } from './public-view.js';
export { registerCatalog } from './register.js';
export {
  isEventId,
  topicNameSubject,
  topicRecordNameSubject,
} from './names.js';
export { LISTED_KINDS, unknownTypeReason } from './unknown-type.js';
