/**
 * Text from records (partner input) made safe to print on a terminal or store in a one-line
 * header: C0 and C1 control characters and DEL become `\uXXXX` escapes, so a hostile header name
 * cannot move the cursor, rewrite a line or set the terminal title (issue 7 trial). Other
 * characters, non-ASCII included, are kept.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
