import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from 'pino'
import type { Config } from '../config/config.js'
import { readMigrationFiles } from '../db/migrate.js'
import type { Metrics } from '../metrics.js'
import type { Releasers } from '../releasers.js'
import { readSnapshotFile, type StoredSnapshot } from '../snapshot-file/read-snapshot-file.js'
import { startSnapshotFileWriter } from '../snapshot-file/snapshot-file-writer.js'
import { createSnapshotFeed, type SnapshotFeed, type SnapshotFeedOptions } from './snapshot-feed.js'

/**
 * The start's third step (service.ts): the snapshot file read (local mode keeps it in `dataDir`
 * beside its key pair, so that `npm start` starts from it too), the feed made from it, and the
 * file's writer; nothing reads the database yet.
 */
export async function openSnapshotFeed(
  context: Pick<SnapshotFeedOptions, 'readUrl' | 'feedUrl' | 'standbyModeAfterMs' | 'now'> & {
    readonly config: Config
    readonly logger: Logger
    readonly metrics: Metrics
    readonly releasers: Releasers
    readonly signal: AbortSignal
    readonly dataDir: string
    /** How often the file records a newer confirmation; the writer's default (a minute). */
    readonly confirmIntervalMs?: number | undefined
  },
): Promise<{ feed: SnapshotFeed; stored: StoredSnapshot | undefined }> {
  const { config, logger, metrics, releasers, signal } = context
  const migrations = (await readMigrationFiles()).map((file) => `${file.name} ${file.checksum}`)
  const snapshotFile =
    config.snapshotFile ?? (config.oidc === null ? join(context.dataDir, 'snapshot') : null)
  signal.throwIfAborted()
  const stored =
    snapshotFile === null ? undefined : await readSnapshotFile(snapshotFile, { migrations, logger })
  const serviceVersion = await readServiceVersion()
  signal.throwIfAborted()
  const feed = createSnapshotFeed({
    readUrl: context.readUrl,
    feedUrl: context.feedUrl,
    logger,
    metrics,
    ...(stored && { stored: { ...stored, maxAgeMs: config.snapshotFileMaxAgeS * 1000 } }),
    standbyModeAfterMs: context.standbyModeAfterMs,
    now: context.now,
  })
  // The writer closes after the feed (releasers run in reverse): a reload that finishes during
  // the shutdown, and the last confirmation, are written. Neither holds anything until started.
  if (snapshotFile !== null) {
    const writer = startSnapshotFileWriter({
      path: snapshotFile,
      snapshots: feed,
      migrations,
      serviceVersion,
      logger,
      metrics,
      ...(context.confirmIntervalMs !== undefined && {
        confirmIntervalMs: context.confirmIntervalMs,
      }),
    })
    releasers.add('snapshot file writer', () => writer.close())
  }
  releasers.add('snapshot feed', () => feed.close())
  return { feed, stored }
}

/** package.json's version: the snapshot file names the service that wrote it. */
async function readServiceVersion(): Promise<string> {
  const text = await readFile(new URL('../../package.json', import.meta.url), 'utf8')
  return (JSON.parse(text) as { version: string }).version
}
