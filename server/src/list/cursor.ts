/**
 * The one cursor format of every keyset list (the mail list, the audit log): the position's values as a
 * base64url JSON array. A deep page costs what page 1 costs (no OFFSET).
 *
 * A cursor is client input like any other: forged ones with a string where an instant
 * belongs, an id of 1e300 or a float once reached PostgreSQL and answered 500. Each list names the check of
 * every value, so what reaches the store is a value its column can hold. Cursors are not signed: a key per
 * process would break paging behind a load balancer, and a forged but well-typed cursor only starts a page
 * where its sender chose, in a list that sender may read anyway.
 */
export type CursorCheck = (value: unknown) => boolean;

export function encodeCursor(values: readonly unknown[]): string {
  return Buffer.from(JSON.stringify(values), 'utf8').toString('base64url');
}

/** The values, each passing its check; undefined for anything else (the caller answers its own 400). */
export function decodeCursor(token: string, checks: readonly CursorCheck[]): unknown[] | undefined {
  let values: unknown;
  try {
    values = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(values) || values.length !== checks.length) return undefined;
  return checks.every((check, i) => check(values[i])) ? values : undefined;
}

/** Whole numbers a JS number holds exactly (ids and millisecond instants of the store fit). */
export const isWholeNumber =
  (min: number, max = Number.MAX_SAFE_INTEGER): CursorCheck =>
  (value) =>
    typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;

/** Text a column can hold (PostgreSQL refuses NUL). */
export const isText: CursorCheck = (value) => typeof value === 'string' && !value.includes('\u0000');
