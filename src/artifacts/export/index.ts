/** artifacts/export: the AsyncAPI 3.0 document and the natural-JSON JSON Schemas of the catalog (bus spec X2, M3). */
export {
  AVRO_SCHEMA_FORMAT,
  buildAsyncApi,
  JSON_SCHEMA_FORMAT,
  jsonSchemaComponent,
  jsonSchemaUrl,
  KAFKA_BINDING_VERSION,
  RECORD_CONTENT_TYPE,
} from './asyncapi.js';
export type { AsyncApiDocument, AsyncApiOptions } from './asyncapi.js';
export { JSON_SCHEMA_DIALECT, naturalJsonSchema } from './json-schema.js';
export type { JsonSchema, JsonSchemaOptions } from './json-schema.js';
export { toJsonText, toYamlText } from './serialize.js';
export { exportCatalogFiles, writeExportedFiles } from './write.js';
export type { ExportedFile, ExportFormat } from './write.js';
