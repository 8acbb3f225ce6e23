import { InvalidArgumentError } from 'commander';

/**
 * A commander option parser for a whole number in `min…max` (a count, a duration in ms).
 * `Number.parseInt` alone takes `-5`, `10abc` and `1e3` as numbers; this takes only digits.
 * Errors: commander's InvalidArgumentError (exit 2 with the usage), naming the accepted range.
 */
export function wholeNumber(min: number, max: number = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value: string): number => {
    const n = /^\d{1,16}$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(`a whole number from ${min} to ${max}`);
    return n;
  };
}
