/** What a deployment check found: facts it verified (printed) and problems (each fails CI). */
export interface Report {
  readonly facts: string[];
  readonly problems: string[];
}

export function report(): Report & { ok(fact: string): void; fail(problem: string): void; check(cond: boolean, fact: string, problem: string): void } {
  const facts: string[] = [];
  const problems: string[] = [];
  return {
    facts,
    problems,
    ok: (fact) => void (facts.includes(fact) || facts.push(fact)),
    fail: (problem) => void problems.push(problem),
    check(cond, fact, problem) {
      if (cond) this.ok(fact);
      else problems.push(problem);
    },
  };
}

/** Prints a report under a title; returns true when it holds no problem. */
export function print(title: string, r: Report): boolean {
  process.stdout.write(`${title}: ${r.facts.length} fact(s) verified, ${r.problems.length} problem(s)\n`);
  for (const f of r.facts) process.stdout.write(`  ok    ${f}\n`);
  for (const p of r.problems) process.stdout.write(`  FAIL  ${p}\n`);
  return r.problems.length === 0;
}
