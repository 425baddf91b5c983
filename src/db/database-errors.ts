/**
 * The fields a log line carries of a database error. An error with a code (a
 * refused connection, an SQLSTATE, a deadline) is expected while the database
 * is away, and retries log it again every few seconds: its type, code and
 * message say it all (`error`), and a stack would repeat on every line. Any
 * other error is logged whole under `err`, stack included: a bug to find.
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
