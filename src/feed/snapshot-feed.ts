import type { Logger } from 'pino'
import { computeBackoffMs } from '../db/backoff.js'
import type { Sql } from '../db/connect.js'
import { databaseErrorFields, describeDatabaseError } from '../db/database-errors.js'
import {
  readAllRows,
  readRevisionsChangedSince,
  readRowsChangedSince,
  type SnapshotRead,
} from '../db/read-snapshot-rows.js'
import type { Metrics } from '../metrics.js'
import { buildFromRead, revisionInSnapshot } from '../snapshot/build.js'
import type { Snapshot, SnapshotSource } from '../snapshot/types.js'
import { type ListeningConnection, startListening } from './listening-connection.js'
import { createReplayWait } from './replay-wait.js'
import { createWindowTimer } from './window-timer.js'
import { withDeadline } from './with-deadline.js'

export interface SnapshotFeedOptions {
  /** The pool reloads and checks read through (DATABASE_URL): the primary, a pooler or a standby. */
  readonly sql: Sql
  /** Session-mode connection string to the primary, for LISTEN (FEED_DATABASE_URL). */
  readonly feedUrl: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** Turns a read into a snapshot; may be async (tests use that to commit during a reload). */
  readonly build?: (
    read: SnapshotRead,
    previous: Snapshot | undefined,
  ) => Snapshot | Promise<Snapshot>
  /** How often the database is checked for changes no notification announced. */
  readonly checkIntervalMs?: number
  /** How long a read may take before it is given up as failed (a connection gone silent). */
  readonly readTimeoutMs?: number
  /** How long a reload waits at most for a standby to replay a notified commit (replay-wait.ts). */
  readonly replayWaitMaxMs?: number
}

export interface SnapshotFeed extends SnapshotSource {
  /** Asks for a reload, as a notification would (waiting for a standby to replay, too). */
  requestReload(): void
  /** Starts listening and loading; returns at once, the first load runs in the background. */
  start(): void
  close(): Promise<void>
}

/**
 * The check's period: the freshness floor when no notification is heard, and how soon a deaf
 * listening connection is found out. One small indexed query, empty when nothing changed.
 */
const CHECK_INTERVAL_MS = 1_000
/**
 * Far above what a full read of a large data set needs (the bench reports it): a read running
 * longer waits on a connection gone silent (a partition), which TCP may hold for minutes.
 */
const READ_TIMEOUT_MS = 30_000

/**
 * Keeps an immutable snapshot of the database fresh, in the shape of graphile-worker's
 * `listenForChanges`. Its states:
 *
 * - **Listening** (listening-connection.ts): a full reload follows each LISTEN put in place, since
 *   notifications sent meanwhile are lost. Each notification marks the snapshot dirty.
 * - **Reloading**: one at a time; one asked for during a reload runs right after it, so a burst
 *   of commits folds into a few. A reload reads the apps changed since the last read, or
 *   everything when `fullRead` is set. A failed one keeps the snapshot in service and is retried
 *   after a capped, jittered backoff (`retryTimer`); a notification waits for the retry, a new
 *   LISTEN or a check that reached the database does not.
 * - **Waiting for a standby** (replay-wait.ts): a reload that a notification or a new LISTEN
 *   asked for (`replayPending`) first waits until a standby has replayed what the primary had
 *   written by then, lest it read stale. Notifications meanwhile fold into the next reload.
 * - **Checking**, every second between reloads: which apps changed since the last read? A change
 *   found is reloaded; if nothing was heard about it a second later either, the listening
 *   connection is deaf and is made again. Finding nothing confirms the snapshot as fresh.
 * - **Windows** (window-timer.ts): at the next instant an item's window opens or closes, the
 *   snapshot is made again, with no database change and whether or not the database answers.
 */
export function createSnapshotFeed(options: SnapshotFeedOptions): SnapshotFeed {
  const { sql, feedUrl, logger, metrics } = options
  const build = options.build ?? buildFromRead
  const checkIntervalMs = options.checkIntervalMs ?? CHECK_INTERVAL_MS
  const readTimeoutMs = options.readTimeoutMs ?? READ_TIMEOUT_MS

  let snapshot: Snapshot | undefined
  // Where the next read starts (see sql/005_change_xids.sql); undefined until a full read.
  let watermark: string | undefined
  let readsStandby: boolean | undefined
  let confirmedAt: number | null = null
  let lastError: string | null = null
  let closed = false

  let dirty = false
  let fullRead = false
  let replayPending = false
  let reloading = false
  let retryTimer: NodeJS.Timeout | undefined
  let failures = 0
  // Counts reads, so a check can tell that a reload read after it started.
  let reads = 0

  let checkTimer: NodeJS.Timeout | undefined
  // The listening connection's count when a check found a change no notification announced.
  let unannouncedAt: number | undefined

  const windows = createWindowTimer({ current: () => snapshot, swap: swapSnapshot })
  let listener: ListeningConnection | undefined
  const swapListeners = new Set<(snapshot: Snapshot) => void>()
  const closing = new AbortController()
  const replayWait = createReplayWait({
    sql,
    onPrimary: (read) => listener?.withConnection(read) ?? Promise.reject(new Error('not started')),
    logger,
    metrics,
    signal: closing.signal,
    maxWaitMs: options.replayWaitMaxMs,
  })

  /**
   * `proven`: the database was just reached, so a retry's backoff need not be waited out.
   * `announced`: a notification or a new LISTEN asks for it, so a standby is waited for.
   */
  function requestReload(reload: { full?: boolean; proven?: boolean; announced?: boolean }): void {
    if (closed) return
    dirty = true
    fullRead ||= reload.full === true
    replayPending ||= reload.announced === true
    if (retryTimer !== undefined && reload.proven !== true) return
    clearTimeout(retryTimer)
    retryTimer = undefined
    if (!reloading) void reloadWhileDirty()
  }

  async function reloadWhileDirty(): Promise<void> {
    reloading = true
    while (dirty && !closed) {
      dirty = false
      const since = fullRead ? undefined : watermark
      fullRead = false
      if (replayPending) {
        replayPending = false
        await replayWait.untilReplayed(readsStandby)
      }
      const startedAt = performance.now()
      try {
        const read = await withDeadline(
          since === undefined ? readAllRows(sql) : readRowsChangedSince(sql, since),
          readTimeoutMs,
        )
        reads += 1
        readsStandby = read.fromStandby
        const next = await build(read, snapshot)
        watermark = read.watermark
        failures = 0
        lastError = null
        confirmedAt = Date.now()
        metrics.snapshotReloads.inc({ result: 'success' })
        metrics.snapshotReloadDuration.observe((performance.now() - startedAt) / 1000)
        swapSnapshot(next)
      } catch (error) {
        metrics.snapshotReloads.inc({ result: 'error' })
        metrics.snapshotReloadDuration.observe((performance.now() - startedAt) / 1000)
        dirty = true
        fullRead ||= since === undefined
        failures += 1
        lastError = describeDatabaseError(error)
        const retryInMs = computeBackoffMs(failures)
        logger.warn(
          {
            ...databaseErrorFields(error),
            attempt: failures,
            retryInMs,
            kept: snapshot !== undefined,
          },
          'snapshot reload failed; keeping the previous snapshot',
        )
        if (!closed) retryTimer = setTimeout(() => requestReload({ proven: true }), retryInMs)
        break
      }
    }
    reloading = false
  }

  function swapSnapshot(next: Snapshot): void {
    metrics.snapshotLoaded.set(1)
    // Nothing changed: the build handed back the snapshot in service.
    if (next === snapshot) return
    snapshot = next
    logger.info({ apps: next.appKeys.length }, 'snapshot loaded')
    if (!closed) windows.arm(next)
    for (const swapListener of swapListeners) swapListener(next)
  }

  async function checkForUnheardChanges(): Promise<void> {
    checkTimer = undefined
    const since = watermark
    if (!closed && since !== undefined && snapshot !== undefined && !dirty && !reloading) {
      const current = snapshot
      const readsBefore = reads
      const announcedBefore = listener?.announcedCount()
      try {
        const check = await withDeadline(readRevisionsChangedSince(sql, since), readTimeoutMs)
        readsStandby = check.fromStandby
        const moved = [...check.revisions].some(
          ([appKey, revision]) => revisionInSnapshot(current, appKey) !== (revision ?? undefined),
        )
        const announced = listener?.announcedCount()
        // Nothing announced for a second since a change was found unannounced: deaf.
        if (unannouncedAt !== undefined && unannouncedAt === announced) listener?.recycleDeaf()
        // A standby that lags past the wait shows changes long after they were announced.
        const announcedEarlier = check.fromStandby && replayWait.isBehind()
        unannouncedAt =
          moved && announced === announcedBefore && listener?.isListening() && !announcedEarlier
            ? announced
            : undefined
        if (moved) requestReload({ proven: true })
        else if (reads === readsBefore && snapshot === current) {
          // The snapshot matches the database as of this check: the next read may start here.
          watermark = check.watermark
          confirmedAt = Date.now()
        }
      } catch (error) {
        // Reloads report an unreachable database; this check only waits for it to return.
        logger.debug({ err: error }, 'the change check failed')
      }
    }
    if (!closed) checkTimer = setTimeout(() => void checkForUnheardChanges(), checkIntervalMs)
  }

  return {
    current: () => snapshot,
    notReadyReason: () =>
      closed
        ? 'shutting down'
        : lastError === null
          ? 'loading the first snapshot'
          : `database unavailable (${lastError})`,
    snapshotAgeSeconds: () => (confirmedAt === null ? null : (Date.now() - confirmedAt) / 1000),
    onSwap(swapListener) {
      swapListeners.add(swapListener)
      return () => swapListeners.delete(swapListener)
    },
    requestReload: () => requestReload({ proven: true, announced: true }),
    start() {
      listener = startListening({
        url: feedUrl,
        logger,
        metrics,
        onListen: () => requestReload({ full: true, proven: true, announced: true }),
        onNotify: () => requestReload({ announced: true }),
        onListenFailed(error) {
          lastError ??= describeDatabaseError(error)
          // The first load does not wait for LISTEN: a database that allows reads but not
          // LISTEN (a pooler misconfiguration) still gives a ready instance.
          if (snapshot === undefined) requestReload({})
        },
      })
      checkTimer = setTimeout(() => void checkForUnheardChanges(), checkIntervalMs)
    },
    async close() {
      closed = true
      closing.abort()
      clearTimeout(retryTimer)
      clearTimeout(checkTimer)
      windows.clear()
      await listener?.close()
    },
  }
}
