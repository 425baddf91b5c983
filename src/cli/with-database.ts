import { connectDatabase, type Sql } from '../db/connect.js'
import { migrateDatabase } from '../db/migrate.js'
import { locateDatabase } from '../embedded/locate-database.js'
import type { CommandContext } from './command-context.js'

/** SQLSTATEs meaning the schema is not there yet: undefined_table, invalid_schema_name. */
const MISSING_SCHEMA_CODES: ReadonlySet<string> = new Set(['42P01', '3F000'])

/**
 * Runs `work` with a pool on the configured database (the embedded one, migrated first since it is
 * ours, when DATABASE_URL is unset) and closes everything afterwards, whatever happens. `primary`:
 * FEED_DATABASE_URL when set, where migrations go (DATABASE_URL may name a read-only standby).
 */
export async function withDatabase<T>(
  context: CommandContext,
  work: (sql: Sql) => Promise<T>,
  options: { primary?: boolean } = {},
): Promise<T> {
  const { config } = context
  const url = options.primary === true ? config.feedDatabaseUrl : config.databaseUrl
  const location = await locateDatabase(url, context.logger)
  // Migrations only on a primary: among several hosts, the one not in recovery (docs/operations.md, "Failover").
  const sql = connectDatabase(location.url, {
    max: 2,
    applicationName: 'shell-data-cli',
    primary: options.primary === true,
  })
  try {
    if (location.embedded) await migrateDatabase(sql, { logger: context.logger })
    return await work(sql)
  } catch (error) {
    if (MISSING_SCHEMA_CODES.has((error as { code?: string }).code ?? '')) {
      throw new Error('the shell schema is not in this database; run `shell-data migrate` first')
    }
    throw error
  } finally {
    await sql.end({ timeout: 5 })
    await location.stop()
  }
}
