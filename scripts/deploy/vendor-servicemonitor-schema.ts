/**
 * Regenerates the vendored JSON Schema of the ServiceMonitor custom resource (monitoring.coreos.com/v1),
 * which kubernetes-validate does not ship, from the CRD that prometheus-operator publishes:
 *
 *   npx tsx scripts/deploy/vendor-servicemonitor-schema.ts v0.85.0
 *
 * It takes the module from the Go module proxy (`go mod download`), reads
 * example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml, and turns the v1
 * openAPIV3Schema into JSON Schema the way kubeconform's openapi2jsonschema does in strict mode:
 * `x-kubernetes-int-or-string` becomes integer-or-string, `nullable` adds null, and an object that
 * lists its properties refuses others unless it says `x-kubernetes-preserve-unknown-fields`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const MODULE = 'github.com/prometheus-operator/prometheus-operator';
const CRD = 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml';
export const SCHEMA_FILE = new URL('./schemas/servicemonitor-monitoring.coreos.com-v1.json', import.meta.url);

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export function toJsonSchema(node: Json): Json {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out: { [k: string]: Json } = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith('x-kubernetes-') || k === 'nullable') continue;
    // Inside `properties` the keys are field names, not keywords.
    out[k] = k === 'properties' && v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).map(([f, s]) => [f, toJsonSchema(s)])) : toJsonSchema(v);
  }
  if (node['x-kubernetes-int-or-string'] === true) {
    delete out.type;
    out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  }
  if (node.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (node.properties !== undefined && node.additionalProperties === undefined && node['x-kubernetes-preserve-unknown-fields'] !== true) out.additionalProperties = false;
  return out;
}

function main(version: string): void {
  const info = JSON.parse(execFileSync('go', ['mod', 'download', '-json', `${MODULE}@${version}`], { encoding: 'utf8' })) as { Dir: string; Version: string };
  const crd = parse(readFileSync(join(info.Dir, CRD), 'utf8')) as { spec: { versions: { name: string; schema: { openAPIV3Schema: Json } }[] } };
  const v1 = crd.spec.versions.find((v) => v.name === 'v1');
  if (!v1) throw new Error('the CRD has no v1');
  const schema = toJsonSchema(v1.schema.openAPIV3Schema) as { [k: string]: Json };
  const props = schema.properties as { [k: string]: Json };
  props.apiVersion = { type: 'string', enum: ['monitoring.coreos.com/v1'] };
  props.kind = { type: 'string', enum: ['ServiceMonitor'] };
  props.metadata = {
    type: 'object',
    required: ['name'],
    properties: { name: { type: 'string', minLength: 1, maxLength: 253 }, namespace: { type: 'string' }, labels: { type: 'object', additionalProperties: { type: 'string' } }, annotations: { type: 'object', additionalProperties: { type: 'string' } } },
  };
  const doc = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    $comment: `ServiceMonitor (monitoring.coreos.com/v1): the openAPIV3Schema of ${MODULE}@${info.Version}, ${CRD}, taken from the Go module proxy and converted by scripts/deploy/vendor-servicemonitor-schema.ts. Regenerate with that script; do not edit.`,
    ...schema,
    required: [...new Set(['apiVersion', 'kind', 'metadata', ...((schema.required as string[] | undefined) ?? [])])],
  };
  writeFileSync(SCHEMA_FILE, `${JSON.stringify(doc, null, 1)}\n`);
  process.stdout.write(`wrote ${SCHEMA_FILE.pathname} from ${MODULE}@${info.Version}\n`);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\0')) main(process.argv[2] ?? 'v0.85.0');
