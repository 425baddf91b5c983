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
 * MIGRATE=auto, at start. A database that takes writes is migrated (under the
 * advisory lock, see migrate.ts). One that does not (a hot standby) is never
 * written to: its migrations come from the primary, by replay, so it is only
 * checked. Resolves with null once every migration file is applied, with its
 * checksum, where the snapshots are read; else with why not yet, naming the
 * migrations, for /readyz (the caller checks again). An applied file edited
 * since throws MigrationError, on a standby too.
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
