/** What runs between listening and the feed: migrations, seeds, and a database that does not answer. */
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import type { Config } from './config/config.js'
import { computeBackoffMs } from './db/backoff.js'
import type { Sql } from './db/connect.js'
import { databaseErrorFields, isServerInRecovery } from './db/database-errors.js'
import { MigrationError } from './db/migrate.js'
import { createOutageLog } from './db/outage-log.js'
import { prepareSchema, type SchemaTargets } from './db/prepare-schema.js'
import { withDeadline } from './db/with-deadline.js'
import { seedEmptyDatabase } from './definitions/import-definitions.js'
import type { SnapshotFeed } from './feed/snapshot-feed.js'
import type { Metrics } from './metrics.js'
import type { SnapshotSource } from './snapshot/types.js'

/** For /readyz: the migrations a read-only database lacks, awaited before the feed starts. */
export interface Preparation {
  readonly signal: AbortSignal
  /** The feed as /readyz sees it: while the schema is awaited, that is the reason. */
  explain(feed: SnapshotFeed): SnapshotSource
  awaitSchema(reason: string | null): void
  abort(): void
}

export function createPreparation(): Preparation {
  const controller = new AbortController()
  let awaited: string | null = null
  return {
    signal: controller.signal,
    explain: (feed) => ({ ...feed, notReadyReason: () => awaited ?? feed.notReadyReason() }),
    awaitSchema(reason) {
      awaited = reason
    },
    abort: () => controller.abort(),
  }
}

/**
 * Migrations (on a read-only database, the check that they are there) and seeds, retried while
 * the database is unreachable or lacks migrations; a broken one is fatal. Closing the service
 * ends the retries and resolves without starting the feed.
 */
export async function prepareDatabaseThenFeed(context: {
  config: Config
  logger: Logger
  sql: Sql
  schema: SchemaTargets
  embedded: boolean
  feed: SnapshotFeed
  preparation: Preparation
  metrics: Metrics
  /** The clock (ms) of the outage's log lines (db/outage-log.ts); tests pass their own. */
  now?: (() => number) | undefined
}): Promise<void> {
  const { config, logger, sql, schema, embedded, feed, preparation, metrics } = context
  const { signal } = preparation
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
      preparation.awaitSchema(reason)
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
 * How long the database may take to answer at start before the snapshot file is served: a
 * refused connection serves it at once, a silent network after this.
 */
const DATABASE_ANSWER_MS = 2_000

/** Serves the stored snapshot unless the database answers in time (it is then caught up first). */
export async function serveStoredUnlessDatabaseAnswers(
  sql: Sql,
  feed: SnapshotFeed,
): Promise<void> {
  try {
    await withDeadline(sql`select 1`, DATABASE_ANSWER_MS)
  } catch {
    feed.serveStored()
  }
}
