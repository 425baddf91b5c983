/**
 * The embedded PostgreSQL could not be prepared or started. Its message is one line saying what
 * failed and what to do, shown as it is: the process then exits 1 without a stack trace.
 */
export class EmbeddedPostgresError extends Error {
  override name = 'EmbeddedPostgresError'
  constructor(message: string) {
    super(message.replace(/\s*\n\s*/g, ' ').trim())
  }
}
