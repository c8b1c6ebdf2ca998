/**
 * `text` as a LIKE pattern piece that matches itself only: `%`, `_` and the escape character are literal.
 * Every LIKE of the store writes `escape '\'` after its pattern (the mail search, the audit log's action prefix).
 */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
