/**
 * The `yaml` package's parse error messages as this project reports them. Its parser is recursive:
 * a document nested some thousands of levels deep ends in the engine's `RangeError: Maximum call
 * stack size exceeded`, which says nothing to whoever wrote the file.
 */

const STACK_OVERFLOW = 'Maximum call stack size exceeded';

/** `message` of a YAML parse error, with a stack overflow said as what it is: nesting too deep. */
export function yamlErrorMessage(message: string): string {
  return message.includes(STACK_OVERFLOW) ? message.replace(STACK_OVERFLOW, 'nested too deeply (collections inside collections beyond what the parser takes)') : message;
}
