/** artifacts/generate: TypeScript constants and natural-JSON payload types from the catalog (bus spec X1). */
export {
  checkGeneratedFiles,
  generateCatalogFiles,
  isUpToDate,
  writeGeneratedFiles,
} from './files.js';
export type { GeneratedCheck, GeneratedFile } from './files.js';
export { namedTypesOf, payloadShape, shortName } from './natural.js';
export type { BranchShape, FieldShape, PayloadShape, RecordShape, Shape } from './natural.js';
export { constantName, eventsModule, GENERATED_HEADER } from './typescript.js';
export { indexModule, kindsModule, PACKAGE_MODULE } from './kinds-module.js';
export type { GenerateTarget } from './kinds-module.js';
export { DEFAULT_CATALOG_SUBDIR, DEFAULT_OUT_SUBDIR, defaultGeneratedDir, resolveCatalogDir, resolveGeneratePaths } from './paths.js';
export type { GeneratePaths } from './paths.js';
