import postgres, { assertDriverFixes } from './postgres-driver.js'

export type Sql = postgres.Sql

export interface ConnectOptions {
  /** Pool size; the service reads the database only on reloads, so a few connections are plenty. */
  readonly max?: number
  /** Shown in pg_stat_activity, so an operator can tell the service's connections apart. */
  readonly applicationName?: string
}

/** A postgres.js pool with the service's settings: quiet notices, bigint ids kept as strings. */
export function connectDatabase(url: string, options: ConnectOptions = {}): Sql {
  assertDriverFixes()
  return postgres(url, {
    max: options.max ?? 4,
    // Idle connections are closed so that a replica does not hold slots it rarely uses.
    idle_timeout: 60,
    // Fail fast when the database is unreachable; callers retry with backoff.
    connect_timeout: 10,
    // No named prepared statements: behind a transaction pooler (PgBouncer in
    // transaction mode) each transaction may get another server connection,
    // where a statement prepared on the last one does not exist. Reloads are
    // rare, so parsing each query anew costs nothing that matters.
    prepare: false,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'shell-data' },
  })
}
