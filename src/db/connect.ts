import { computeBackoffMs } from './backoff.js'
import postgres from './postgres-driver.js'

export type Sql = postgres.Sql

export interface ConnectOptions {
  /** Pool size; the service reads the database only on reloads, so a few connections are plenty. */
  readonly max?: number
  /** Shown in pg_stat_activity, so an operator can tell the service's connections apart. */
  readonly applicationName?: string
  /**
   * Only a primary will do (the listening connection, migrations, the reads of an instance that
   * reads the primary): a server in recovery is left for the next host, and past the last the
   * query fails with code TARGET_SESSION_ATTRS (db/database-errors.ts, `isServerInRecovery`).
   */
  readonly primary?: boolean
  /** For the LISTEN connection: never closed as idle or old, told of notifications and loss. */
  readonly listening?: {
    onNotify(channel: string, payload: string): void
    onClose(): void
  }
}

/** A postgres.js pool with the service's settings: quiet notices, bigint ids kept as strings. */
export function connectDatabase(url: string, options: ConnectOptions = {}): Sql {
  const { listening } = options
  return postgres(url, {
    max: options.max ?? 4,
    ...(listening === undefined
      ? // Idle connections are closed so that a replica does not hold slots it rarely uses.
        { idle_timeout: 60 }
      : { max_lifetime: null, onnotify: listening.onNotify, onclose: listening.onClose }),
    // Fail fast when the database is unreachable; callers retry with backoff.
    connect_timeout: 10,
    // The driver's own wait before reconnecting grows to 20 s; the service's is capped at 1 s.
    backoff: (attempt) => computeBackoffMs(attempt) / 1000,
    // No named prepared statements: behind a transaction pooler each transaction may get another
    // server connection, where they do not exist. Reloads are rare, so parsing costs little.
    prepare: false,
    // libpq's `primary`: not in recovery. A primary with default_transaction_read_only on is
    // still one; migrations check for it (read-only.ts).
    ...(options.primary === true && { target_session_attrs: 'primary' as const }),
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'shell-data' },
  })
}

/** The `host:port` list of a connection string, for log lines: no user, password or database. */
export function describeHosts(url: string): string {
  return /^[^:]+:\/\/(?:[^@/?#]*@)?([^/?#]*)/.exec(url)?.[1] ?? 'the database'
}

/** Several hosts, tried in order (docs/operations.md, "Failover"). */
export function namesSeveralHosts(url: string): boolean {
  return describeHosts(url).includes(',')
}
