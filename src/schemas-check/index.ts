/** The schema check and register use cases: compatibility against the registry or git history (bus spec X1; DESIGN "The model is the schema registry"). */
export { checkCatalog, checkKind, invalidFilesReport, loadCatalogForCheck, loadCatalogForRegister } from './check.js';
export type { CatalogLoad, CheckKindOptions, PartialCatalogLoad } from './check.js';
export { schemaChanges } from './changes.js';
export { formatCheckReport, formatRegisterReport } from './format.js';
export { createGitHistory } from './git-history.js';
export type { GitHistoryOptions } from './git-history.js';
export { createRegistryHistory } from './registry-history.js';
export type { RegistryHistoryOptions } from './registry-history.js';
export { registerSchemas } from './register.js';
export type {
  CheckReport,
  HistoricVersion,
  InvalidSchemaFile,
  KindCheck,
  KindRegistration,
  KindStatus,
  RegisterReport,
  RegisterStatus,
  SchemaHistory,
} from './types.js';
