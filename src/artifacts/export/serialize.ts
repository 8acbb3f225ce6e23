/**
 * Text forms of exported documents: JSON (2-space indent, trailing newline) and YAML 1.2.
 * Both keep the documents' key order, so equal documents give byte-equal text.
 * Spec: RFC 8259 (JSON); YAML 1.2.2.
 */
import { stringify } from 'yaml';
import type { JsonValue } from '../../envelope/types.js';

/** JSON text of `doc`, 2-space indented, ending in a newline. */
export function toJsonText(doc: JsonValue): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** YAML text of `doc`: block style, no line folding, no anchors. */
export function toYamlText(doc: JsonValue): string {
  return stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}
