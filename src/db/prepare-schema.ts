import type { Logger } from 'pino'
import type { Sql } from './connect.js'
import { findUnappliedMigrations, migrateDatabase } from './migrate.js'
import { findWhyReadOnly } from './read-only.js'

/** A database the start touches, and the variable that names it, for the reason it gives. */
export interface NamedDatabase {
  readonly sql: Sql
  readonly variable: 'DATABASE_URL' | 'FEED_DATABASE_URL'
}

export interface SchemaTargets {
  /** Where migrations go: FEED_DATABASE_URL (the primary) when it is set, else DATABASE_URL. */
  readonly migrations: NamedDatabase
  /** DATABASE_URL when it is not `migrations` (a standby, a pooler): the schema must be there too. */
  readonly reads: NamedDatabase | null
}

/**
 * MIGRATE=auto, at start: migrates a database that takes writes, only checks one that does not
 * (a standby replays the primary's). Null once every migration is applied where snapshots are
 * read, else why not yet, for /readyz (the caller checks again). An edited applied file throws.
 */
export async function prepareSchema(
  targets: SchemaTargets,
  logger: Logger,
): Promise<string | null> {
  const { migrations, reads } = targets
  const readOnly = await findWhyReadOnly(migrations.sql)
  if (readOnly === null) {
    await migrateDatabase(migrations.sql, { logger })
  } else {
    const unapplied = await findUnappliedMigrations(migrations.sql)
    if (unapplied.length > 0) {
      return `migrations not applied: ${unapplied.join(', ')}; ${migrations.variable} is ${readOnly}, where they cannot be applied: apply them on the primary (shell-data migrate, or an instance whose FEED_DATABASE_URL names it)`
    }
  }
  if (reads === null) return null
  const unreplayed = await findUnappliedMigrations(reads.sql)
  if (unreplayed.length === 0) return null
  return `migrations not applied in ${reads.variable}: ${unreplayed.join(', ')}; they are in ${migrations.variable}, so ${reads.variable} should be a standby of it that has not replayed them yet`
}
