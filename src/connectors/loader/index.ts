/** Loader of the top-level `connectors/*.yaml` files and their start-up. */
export { connectorFilesInSubfolders, loadConnectors, noConnectorFilesWarning } from './load.js';
export type { LoadContext } from './load.js';
export { parseConnectorText, problemPath } from './parse.js';
export type { ParseContext, ParsedConnector, ResolvedSink } from './parse.js';
export { DEFAULT_RETRY, connectorFileSchema, connectorKinds } from './schema.js';
export type { ConnectorFile, ConnectorKind, ParsedConnectorFile } from './schema.js';
export { CONNECTOR_PARTITIONS_CONCURRENTLY, connectorHandler, connectorView, startConnectors } from './start.js';
export type { ConnectorHost, ConnectorsHandle, RunningConnector, StartConnectorsOptions } from './start.js';
export type { ConnectorDefinition, ConnectorProblem } from './types.js';
