/**
 * Human-readable reports of `schemas check` and `schemas register`: one line per kind, then one
 * indented line per problem; a summary line last.
 */
import type { CheckReport, RegisterReport } from './types.js';

function versions(list: readonly { readonly label: string }[]): string {
  if (list.length === 0) return 'nothing';
  if (list.length === 1) return list[0]?.label ?? '';
  return `${list.length} versions (${list[0]?.label ?? ''} … ${list.at(-1)?.label ?? ''})`;
}

/** The check report as text lines (no trailing newline on the last). */
export function formatCheckReport(r: CheckReport): string {
  const lines: string[] = [`schemas check: ${r.catalogDir} against the ${r.against}`];
  for (const f of r.invalidFiles) {
    lines.push(`INVALID       ${f.schemaFile}: the catalog cannot load it`);
    for (const p of f.problems) lines.push(`    ${p.path}: ${p.message}`);
  }
  const counts = { compatible: 0, incompatible: 0, invalid: 0, new: 0, 'not-latest': 0 };
  for (const k of r.kinds) {
    counts[k.status] += 1;
    const head = `${k.name} (${k.schemaFile}, subject ${k.subject}, ${k.level})`;
    switch (k.status) {
      case 'new':
        lines.push(`new           ${head}: no earlier version`);
        break;
      case 'compatible':
        lines.push(`compatible    ${head}: ${k.changed ? 'changed, ' : 'unchanged, '}compatible with ${k.level === 'NONE' ? 'nothing (level NONE)' : versions(k.compared)}`);
        break;
      case 'invalid':
        lines.push(`INVALID       ${head}: not a valid Avro schema`);
        for (const p of k.problems) lines.push(`    ${p.path}: ${p.message}`);
        break;
      case 'not-latest':
        lines.push(`NOT-LATEST    ${head}: identical to ${k.notLatest?.matches ?? 'an older version'}, but the subject's latest is ${k.notLatest?.latest ?? 'newer'}`);
        break;
      case 'incompatible':
        lines.push(`INCOMPATIBLE  ${head}: ${k.findings.length} problem(s) against ${versions(k.compared)}`);
        for (const f of k.findings) lines.push(`    [${f.direction} vs ${f.label}] ${f.message}`);
        break;
    }
    for (const n of k.notes) lines.push(`    note: ${n}`);
  }
  const invalid = counts.invalid + r.invalidFiles.length;
  lines.push(`${r.ok ? 'OK' : 'FAILED'}: ${counts.compatible} compatible, ${counts.new} new, ${counts.incompatible} incompatible, ${invalid} invalid${counts['not-latest'] === 0 ? '' : `, ${counts['not-latest']} not latest`}`);
  return lines.join('\n');
}

/** The register report as text lines. */
export function formatRegisterReport(r: RegisterReport): string {
  const lines: string[] = [`schemas register: ${r.registry}`];
  for (const f of r.invalidFiles) {
    lines.push(`INVALID       ${f.schemaFile}: the catalog cannot load it, nothing registered`);
    for (const p of f.problems) lines.push(`    ${p.path}: ${p.message}`);
  }
  for (const k of r.kinds) {
    const head = `${k.name} (subject ${k.subject}, ${k.level})`;
    switch (k.status) {
      case 'registered':
        lines.push(`registered    ${head}: version ${k.version ?? '?'}, id ${k.id ?? '?'}`);
        for (const c of k.changes) lines.push(`    ${c}`);
        break;
      case 'unchanged':
        lines.push(`unchanged     ${head}: already version ${k.version ?? '?'}, id ${k.id ?? '?'}`);
        break;
      case 'not-latest':
        lines.push(`NOT-LATEST    ${head}: matches version ${k.version ?? '?'} (id ${k.id ?? '?'}), but the subject's latest is version ${k.latestVersion ?? '?'}`);
        for (const reason of k.reasons) lines.push(`    ${reason}`);
        break;
      default:
        lines.push(`${k.status.toUpperCase().padEnd(13)} ${head}: not registered`);
        for (const reason of k.reasons) lines.push(`    ${reason}`);
    }
  }
  const n = (s: string): number => r.kinds.filter((k) => k.status === s).length;
  const notLatest = n('not-latest') === 0 ? '' : `, ${n('not-latest')} not latest`;
  lines.push(`${r.ok ? 'OK' : 'FAILED'}: ${n('registered')} registered, ${n('unchanged')} unchanged${notLatest}, ${r.kinds.length - n('registered') - n('unchanged') - n('not-latest')} not registered${r.invalidFiles.length === 0 ? '' : `, ${r.invalidFiles.length} invalid file(s)`}`);
  return lines.join('\n');
}
