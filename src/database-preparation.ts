/** The start around the schema: where it is prepared, migrations, seeds, and a database that does not answer. */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Config } from './config/config.js'
import { computeBackoffMs } from './db/backoff.js'
import { connectDatabase, namesSeveralHosts, type Sql } from './db/connect.js'
import { databaseErrorFields, isServerInRecovery } from './db/database-errors.js'
import { MigrationError } from './db/migrate.js'
import { createOutageLog } from './db/outage-log.js'
import { prepareSchema, type SchemaTargets } from './db/prepare-schema.js'
import { withDeadline } from './db/with-deadline.js'
import { seedEmptyDatabase } from './definitions/import-definitions.js'
import type { SnapshotFeed } from './feed/snapshot-feed.js'
import type { Metrics } from './metrics.js'
import type { Releasers } from './releasers.js'

/**
 * How long the database may take to answer at start before the snapshot file is served; an
 * answer in time catches the snapshot up from the database first.
 */
const DATABASE_ANSWER_MS = 2_000

/**
 * Migrations (on a read-only database, the check that they are there) and seeds, retried while
 * the database is unreachable or lacks migrations; a broken one is fatal. Closing the service
 * ends the retries and resolves without starting the feed. While the database does not answer
 * in time, or an attempt fails, the feed serves its stored snapshot.
 */
export async function prepareSchemaThenStartFeed(context: {
  config: Config
  logger: Logger
  sql: Sql
  schema: SchemaTargets
  embedded: boolean
  feed: SnapshotFeed
  /** The feed has a stored snapshot: it is served at once unless the database answers in time. */
  stored: boolean
  /** Aborted by a close: the retries end and the feed is not started. */
  signal: AbortSignal
  metrics: Metrics
  /** The clock (ms) of the outage's log lines (db/outage-log.ts); tests pass their own. */
  now?: (() => number) | undefined
}): Promise<void> {
  const { config, logger, sql, schema, embedded, feed, signal, metrics } = context
  // A refused connection serves the stored snapshot at once, a silent network after a deadline.
  if (context.stored)
    void withDeadline(sql`select 1`, DATABASE_ANSWER_MS).catch(() => feed.serveStored())
  const outage = createOutageLog({
    logger,
    ...(context.now && { now: context.now }),
    messages: {
      down: 'database not ready for migrations; retrying within a second, quietly (shell_database_attempts_total counts the attempts)',
      still: 'database still not ready for migrations; retrying',
      back: 'the database answers: preparing it',
    },
  })
  let lastReason: string | null = null
  for (let attempt = 1; !signal.aborted; attempt += 1) {
    const retryInMs = computeBackoffMs(attempt)
    try {
      const reason = config.migrate === 'auto' ? await prepareSchema(schema, logger) : null
      metrics.databaseAttempts.inc({ task: 'prepare', result: 'success' })
      outage.succeeded()
      feed.awaitSchema(reason)
      if (reason === null) {
        if (embedded) await seedEmptyDatabase(sql, logger)
        break
      }
      if (reason !== lastReason) logger.warn({ reason }, 'waiting for migrations; checking again')
      lastReason = reason
    } catch (error) {
      if (error instanceof MigrationError) throw error
      if (signal.aborted) return
      feed.serveStored()
      const result = isServerInRecovery(error) ? 'in_recovery' : 'error'
      metrics.databaseAttempts.inc({ task: 'prepare', result })
      outage.failed({ ...databaseErrorFields(error), retryInMs })
    }
    await sleep(retryInMs, undefined, { signal }).catch(() => {})
  }
  if (lastReason !== null) logger.info('every migration is applied')
  if (!signal.aborted) feed.start()
}

/**
 * Where the schema is prepared. Migrations go to the primary, where the advisory lock holds
 * (docs/operations.md, "Migrations"): FEED_DATABASE_URL when it differs, and among several hosts
 * the one not in recovery ("Failover"); one host alone may be a standby on purpose, checked,
 * never written (prepare-schema.ts). Used at start: its connection closes after 1 min idle.
 */
export function openSchemaTargets(
  sql: Sql,
  urls: { readonly readUrl: string; readonly feedUrl: string },
  releasers: Releasers,
): SchemaTargets {
  const separateFeed = urls.feedUrl !== urls.readUrl
  if (!separateFeed && !namesSeveralHosts(urls.feedUrl))
    return { migrations: { sql, variable: 'DATABASE_URL' }, reads: null }
  const migrationSql = connectDatabase(urls.feedUrl, {
    max: 1,
    applicationName: 'shell-data-migrate',
    primary: true,
  })
  releasers.add('migration connection', () => migrationSql.end({ timeout: 5 }))
  return {
    migrations: {
      sql: migrationSql,
      variable: separateFeed ? 'FEED_DATABASE_URL' : 'DATABASE_URL',
    },
    reads: separateFeed ? { sql, variable: 'DATABASE_URL' } : null,
  }
}
