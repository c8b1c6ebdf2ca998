/**
 * Which store failures mean "the database is not there right now" rather than "this request is wrong" or
 * "our code is wrong". Those answer 503 (HTTP) or 451 (SMTP), so a client retries later and nothing is
 * acknowledged that was not committed; /healthz says unavailable until the store answers again.
 */

/** PostgreSQL SQLSTATE classes and codes of a server that is going, gone or not yet back. */
const unavailableSqlStates = new Set([
  '57P01', // admin_shutdown: terminating connection due to administrator command (restart)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the database system is starting up / shutting down
  '53300', // too_many_connections
]);

/** Socket-level failures of the driver before or while talking to the server. */
const unavailableNetworkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);

/** SQLite: another writer held the lock past busy_timeout; the store is there but cannot take this now. */
const busySqliteCodes = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED']);

export function isStoreUnavailableError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as Error & { code?: unknown }).code;
  if (typeof code === 'string') {
    if (unavailableSqlStates.has(code) || code.startsWith('08')) return true; // 08xxx: connection exception
    if (unavailableNetworkCodes.has(code) || busySqliteCodes.has(code)) return true;
  }
  // pg reports a socket that closed under it, or a client it already knows is dead, without a code.
  return /Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect/i.test(
    error.message,
  );
}

/**
 * The store's disk is full: SQLite's disk or its max_page_count (SQLITE_FULL), or PostgreSQL's (53100
 * disk_full). Nothing more can be written until space returns.
 */
export function isStoreFullError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as Error & { code?: unknown }).code;
  return code === 'SQLITE_FULL' || code === '53100';
}
