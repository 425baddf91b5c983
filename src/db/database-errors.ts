/**
 * A database error's log fields. One with a code (refused connection, SQLSTATE, deadline) is
 * expected while the database is away and logged at every retry: type, code and message, no stack
 * (`error`). Any other error is logged whole under `err`: a bug to find.
 */
export function databaseErrorFields(
  error: unknown,
): { err: unknown } | { error: { type: string; code: string; message: string } } {
  if (!(error instanceof Error)) return { err: error }
  const { code } = error as { code?: unknown }
  if (typeof code !== 'string') return { err: error }
  return { error: { type: error.name, code, message: error.message } }
}

/** A short, safe description for /readyz: the SQLSTATE or socket error code, never a connection string. */
export function describeDatabaseError(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'unknown error'
}

/** read_only_sql_transaction: a write or LISTEN refused, as a hot standby refuses them during recovery. */
const READ_ONLY_SQL_TRANSACTION = '25006'
/** The driver's code when no host matched target_session_attrs (src/vendor/postgres/README.md). */
const TARGET_SESSION_ATTRS = 'TARGET_SESSION_ATTRS'

/**
 * The server found is in recovery (a hot standby), where a primary is needed: found at connect
 * (target_session_attrs=primary), or later as a write or LISTEN refused with SQLSTATE 25006.
 */
export function isServerInRecovery(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === READ_ONLY_SQL_TRANSACTION || code === TARGET_SESSION_ATTRS
}
