import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { problemStatus } from '../../../src/codec/http/problem.js';
import { errorCodes, GatewayError, type ErrorCode } from '../../../src/core/errors.js';

describe('docs/errors.md', () => {
  const doc = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  it.each(errorCodes.map((c) => [c]))('documents %s', (code) => {
    expect(doc).toContain(`| \`${code}\` |`);
  });
  it('lists no code that does not exist', () => {
    const listed = [...doc.matchAll(/^\| `(CEG_[A-Z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.sort()).toEqual([...errorCodes].sort());
  });

  // The HTTP column is what a client sees: each row's status is the one the problem answer carries
  // for that code, as the row's retriable column says it is raised ("yes" / "no"; a row that is
  // "either" or has no status, such as CEG_SINK_FAILED, is not an HTTP answer).
  const rows = [...doc.matchAll(/^\| `(CEG_[A-Z_]+)` \| ([^|]+) \| ([^|]+) \|/gm)].map((m) => ({ code: m[1] as ErrorCode, http: m[2]!.trim(), retriable: m[3]!.trim() }));
  const checked = rows.filter((r) => /^\d{3}$/.test(r.http) && /^(yes|no)\b/.test(r.retriable));
  it('checks most rows', () => {
    expect(checked.length).toBeGreaterThan(errorCodes.length - 5);
  });
  it.each(checked.map((r) => [r.code, r.http, r.retriable]))('%s is answered with the HTTP status the table gives (%s, retriable %s)', (code, http, retriable) => {
    const err = new GatewayError(code, 'x', { retriable: String(retriable).startsWith('yes') });
    expect(String(problemStatus(err))).toBe(http);
  });
});
