/**
 * `ce-gateway deadletters redrive|purge --dead-letter <partition>:<offset>` (break report E5: a
 * dead letter that is not a readable event has no id to give `--id`): the flag's parser takes a
 * partition that is a safe integer ≥ 0 and an offset in decimal up to 2^63−1 (also as `list`
 * prints them, `partition@offset`), repeatable; anything else is a usage error naming what is
 * wrong; it does not mix with `--id`, `--source` or `--all`.
 */
import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { deadLetterArg, selection } from '../../../src/cli/commands/deadletters.js';
import { isGatewayError } from '../../../src/core/errors.js';

describe('--dead-letter <partition>:<offset>', () => {
  it('takes whole numbers in range, as partition:offset or partition@offset, and accumulates', () => {
    expect(deadLetterArg('0:0')).toEqual([{ partition: 0, offset: '0' }]);
    expect(deadLetterArg('3@12', [{ partition: 0, offset: '1' }])).toEqual([{ partition: 0, offset: '1' }, { partition: 3, offset: '12' }]);
    expect(deadLetterArg('9007199254740991:9223372036854775807')).toEqual([{ partition: 9007199254740991, offset: '9223372036854775807' }]);
  });

  it('refuses anything else with a usage error that says what is wrong', () => {
    const cases: [string, RegExp][] = [
      ['12', /<partition>:<offset>/],
      ['', /<partition>:<offset>/],
      ['0:', /<partition>:<offset>/],
      [':5', /<partition>:<offset>/],
      ['-1:5', /<partition>:<offset>/],
      ['0:-5', /<partition>:<offset>/],
      ['0:1:2', /<partition>:<offset>/],
      [' 0:1', /<partition>:<offset>/],
      ['0:1e3', /<partition>:<offset>/],
      ['0x1:2', /<partition>:<offset>/],
      ['1.5:2', /<partition>:<offset>/],
      ['00:1', /partition/],
      ['9007199254740992:1', /partition/],
      ['0:01', /offset/],
      ['0:9223372036854775808', /offset.*9223372036854775807/],
      ['0:99999999999999999999', /offset/],
    ];
    for (const [value, message] of cases) expect(() => deadLetterArg(value), value).toThrow(message);
  });

  it('is repeatable on the command line, and refused naming the option when malformed', () => {
    const parse = (args: string[]): { deadLetter?: unknown } => {
      const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
      program.option('--dead-letter <partition:offset>', '', deadLetterArg);
      program.parse(args, { from: 'user' });
      return program.opts();
    };
    expect(parse(['--dead-letter', '0:12', '--dead-letter', '1@3']).deadLetter).toEqual([{ partition: 0, offset: '12' }, { partition: 1, offset: '3' }]);
    const err = (() => {
      try {
        parse(['--dead-letter', '0:x']);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(CommanderError);
    expect((err as CommanderError).exitCode).toBe(1); // commander's own code; the CLI maps usage errors to exit 2 (usage-errors.test.ts)
    expect((err as CommanderError).message).toMatch(/--dead-letter/);
  });
});

describe('selection', () => {
  it('--dead-letter selects deadLetters, and does not mix with --id, --source or --all', () => {
    expect(selection({ deadLetter: [{ partition: 0, offset: '1' }] })).toEqual({ deadLetters: [{ partition: 0, offset: '1' }] });
    const usage = (opts: Parameters<typeof selection>[0]): string => {
      try {
        selection(opts);
      } catch (e) {
        if (isGatewayError(e, 'CEG_MALFORMED_REQUEST')) return e.message;
        throw e;
      }
      return 'accepted';
    };
    const one = [{ partition: 0, offset: '1' }];
    expect(usage({ deadLetter: one, all: true })).toMatch(/either --dead-letter or --all/);
    expect(usage({ deadLetter: one, id: ['x'] })).toMatch(/either --dead-letter or --id/);
    expect(usage({ deadLetter: one, id: ['x'], source: 'urn:a' })).toMatch(/either --dead-letter or --id and --source/);
    expect(usage({ deadLetter: Array.from({ length: 1001 }, (_, i) => ({ partition: 0, offset: String(i) })) })).toMatch(/at most 1000 --dead-letter/);
    expect(usage({})).toMatch(/--dead-letter <partition>@<offset>/);
  });
});
