import type { Logger } from 'pino'
import type { Sql } from '../db/connect.js'
import { databaseErrorFields } from '../db/database-error-fields.js'
import { type AppRevisions, readSnapshotRows } from '../db/read-snapshot-rows.js'
import type { Metrics } from '../metrics.js'
import { type BuildSnapshotOptions, buildSnapshot } from '../snapshot/build.js'
import type { Snapshot, SnapshotRows } from '../snapshot/types.js'
import { computeBackoffMs } from './backoff.js'
import { createChangeListener, describeDatabaseError } from './change-listener.js'
import type { PrefetchedRead } from './listener-messages.js'
import { type spawnListenerThread, startListenerWorker } from './listener-worker.js'
import { withReloadDeadline } from './reload-deadline.js'
import { startUnheardCheck, UNHEARD_CHECK_INTERVAL_MS } from './unheard-check.js'

export { CHANGE_CHANNEL } from './change-listener.js'

export interface SnapshotFeedOptions {
  /** Pool for reloads and probes. */
  readonly sql: Sql
  /** What `sql` connects to: the listener thread reads changes through it. */
  readonly databaseUrl: string
  /** Session-mode connection string for LISTEN (FEED_DATABASE_URL). */
  readonly feedUrl: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** Turns rows into a snapshot; may be async (tests use that to commit during a reload). */
  readonly build?: (
    rows: SnapshotRows,
    options: BuildSnapshotOptions,
  ) => Snapshot | Promise<Snapshot>
  /** How often the listening connection is proven alive by a notification round trip. */
  readonly probeIntervalMs?: number
  /** How long a probe may take before the listening connection is declared dead. */
  readonly probeTimeoutMs?: number
  /** How long a reload's read may take before it is given up as failed and retried. */
  readonly reloadTimeoutMs?: number
  /** How often the revisions are checked while the feed is not proven to be listening. */
  readonly unheardCheckIntervalMs?: number
  /** Starts the listener thread; tests wrap it to stop the thread as a crash would. */
  readonly spawnListenerThread?: typeof spawnListenerThread
}

export interface SnapshotFeed {
  /** The snapshot in service, or undefined before the first load. */
  current(): Snapshot | undefined
  /** Why there is no snapshot yet, for /readyz. */
  notReadyReason(): string
  /** Seconds since the last successful read of the database (the snapshot may be older if nothing changed). */
  snapshotAgeSeconds(): number | null
  /** Called after every swap; returns an unsubscribe function. */
  onSwap(listener: (snapshot: Snapshot) => void): () => void
  /** Asks for a reload, as a notification would. */
  requestReload(): void
  /** Starts listening and loading; returns at once, the first load runs in the background. */
  start(): void
  close(): Promise<void>
}

/**
 * Keeps an immutable snapshot of the database fresh. One reload at a time;
 * notifications during a reload cause exactly one more; a full reload after
 * every (re)listen, since notifications sent while disconnected are lost; a
 * periodic notification round trip catches a silent, half-open listening
 * connection; a failed reload keeps the previous snapshot and is retried
 * with backoff.
 */
export function createSnapshotFeed(options: SnapshotFeedOptions): SnapshotFeed {
  const { sql, databaseUrl, feedUrl, logger, metrics } = options
  const build = options.build ?? buildSnapshot
  // Far above what a full read of a large data set needs (the bench reports it); a read
  // still running after 30 s waits on a connection that went silent (a partition),
  // which TCP may hold for minutes.
  const reloadTimeoutMs = options.reloadTimeoutMs ?? 30_000
  let unheardCheck: { stop(): void } | undefined

  let snapshot: Snapshot | undefined
  // Revisions of the last successful read, so the next read takes only the apps that moved.
  let knownRevisions: AppRevisions | undefined
  // Numbers each knownRevisions, so that a change read in the listener thread against
  // older ones is told apart, and read again here.
  let knownGeneration = 0
  // Set after every (re)listen: the next reload reads everything, whatever the revisions say.
  let fullReadRequested = true
  let lastSuccessAt: number | null = null
  let lastError: string | null = null
  let closed = false

  let reloading = false
  let reloadAgain = false
  // A retry's backoff, or a reload a change asked for (next turn of the event loop).
  let reloadTimer: { cancel(): void } | undefined
  let reloadTimerIsRetry = false
  let reloadFailures = 0

  const swapListeners = new Set<(snapshot: Snapshot) => void>()

  const worker = startListenerWorker({
    logger,
    databaseUrl,
    ...(options.spawnListenerThread === undefined
      ? {}
      : { spawnThread: options.spawnListenerThread }),
  })
  const listener = createChangeListener({
    sql,
    feedUrl,
    worker,
    logger,
    metrics,
    ...(options.probeIntervalMs === undefined ? {} : { probeIntervalMs: options.probeIntervalMs }),
    ...(options.probeTimeoutMs === undefined ? {} : { probeTimeoutMs: options.probeTimeoutMs }),
    onChange(prefetched) {
      if (prefetched !== undefined && canTakePrefetched(prefetched)) void reloadSnapshot(prefetched)
      else requestReload()
    },
    onListen(isReconnect) {
      // Notifications sent while we were not listening are lost: reload. Revisions move
      // with every commit, so the apps that changed meanwhile are read whatever was
      // missed; after a reconnect everything is read anyway, in case rows were written
      // around the triggers. The first LISTEN follows the first full read closely:
      // a revision-based read is enough there, and keeps start-up to one full read.
      if (isReconnect) fullReadRequested = true
      requestReload()
    },
    onListenError(error) {
      lastError ??= describeDatabaseError(error)
    },
  })

  /**
   * A change read in the listener thread is the reload itself when nothing
   * else is under way and it was read against the revisions in service.
   */
  function canTakePrefetched(prefetched: PrefetchedRead): boolean {
    return (
      !closed &&
      !reloading &&
      reloadTimer === undefined &&
      !fullReadRequested &&
      prefetched.generation === knownGeneration
    )
  }

  function requestReload(): void {
    if (closed) return
    if (reloading) {
      reloadAgain = true
      return
    }
    // A scheduled retry waits out a backoff; a fresh reason to reload (a reconnect, a change) goes first.
    if (reloadTimer !== undefined && !reloadTimerIsRetry) return
    scheduleReload(0, false)
  }

  /**
   * A change's reload starts at once: in a microtask, so that every
   * notification parsed from the same packet (one COMMIT's, which arrive
   * together) folds into it, and its query goes out in this turn of the event
   * loop. Under load every turn waits behind the requests, so each turn saved
   * shows in the change-to-snapshot time. A longer burst is folded by
   * one-reload-at-a-time: a change during a reload asks for exactly one more.
   */
  function scheduleReload(delayMs: number, isRetry: boolean): void {
    reloadTimer?.cancel()
    reloadTimerIsRetry = isRetry
    if (delayMs === 0) {
      let cancelled = false
      queueMicrotask(() => {
        if (!cancelled) void reloadSnapshot()
      })
      reloadTimer = {
        cancel: () => {
          cancelled = true
        },
      }
    } else {
      const timer = setTimeout(() => void reloadSnapshot(), delayMs)
      reloadTimer = { cancel: () => clearTimeout(timer) }
    }
  }

  async function reloadSnapshot(prefetched?: PrefetchedRead): Promise<void> {
    reloadTimer = undefined
    reloading = true
    reloadAgain = false
    // A prefetched read counts from when the listener thread started it.
    const startedAt = performance.now() - (prefetched?.readMs ?? 0)
    const fullRead = fullReadRequested
    fullReadRequested = false
    try {
      const read =
        prefetched?.read ??
        (await withReloadDeadline(
          readSnapshotRows(sql, fullRead ? undefined : knownRevisions),
          reloadTimeoutMs,
        ))
      const next = await build(read.rows, {
        ...(snapshot === undefined ? {} : { previous: snapshot }),
        unchangedApps: read.unchangedApps,
      })
      knownRevisions = read.revisions
      knownGeneration += 1
      worker.setKnown(knownGeneration, knownRevisions)
      observeReloadDuration(startedAt)
      metrics.snapshotReloads.inc({ result: 'success' })
      reloadFailures = 0
      lastSuccessAt = Date.now()
      lastError = null
      swapSnapshot(next)
    } catch (error) {
      observeReloadDuration(startedAt)
      fullReadRequested ||= fullRead
      metrics.snapshotReloads.inc({ result: 'error' })
      reloadFailures += 1
      lastError = describeDatabaseError(error)
      const retryInMs = computeBackoffMs(reloadFailures)
      logger.warn(
        {
          ...databaseErrorFields(error),
          attempt: reloadFailures,
          retryInMs,
          keptVersion: snapshot?.version ?? null,
        },
        'snapshot reload failed; keeping the previous snapshot',
      )
      reloading = false
      if (!closed) scheduleReload(retryInMs, true)
      // The database may be gone for the listener too: check it now rather than at the next tick.
      listener.probeSoon()
      return
    }
    reloading = false
    if (reloadAgain) requestReload()
  }

  function observeReloadDuration(startedAt: number): void {
    metrics.snapshotReloadDuration.observe((performance.now() - startedAt) / 1000)
  }

  function swapSnapshot(next: Snapshot): void {
    metrics.snapshotLoaded.set(1)
    // Same content: keep the snapshot in service, and with it its memoized variants.
    if (snapshot !== undefined && snapshot.version === next.version) return
    const previous = snapshot
    snapshot = next
    logger.info(
      {
        version: next.version,
        previousVersion: previous?.version ?? null,
        apps: next.appKeys.length,
      },
      'snapshot loaded',
    )
    for (const swapListener of swapListeners) swapListener(next)
  }

  return {
    current() {
      worker.takeMessages()
      return snapshot
    },
    notReadyReason: () =>
      closed
        ? 'shutting down'
        : lastError === null
          ? 'loading the first snapshot'
          : `database unavailable (${lastError})`,
    snapshotAgeSeconds: () => (lastSuccessAt === null ? null : (Date.now() - lastSuccessAt) / 1000),
    onSwap(swapListener) {
      swapListeners.add(swapListener)
      return () => swapListeners.delete(swapListener)
    },
    requestReload,
    start() {
      listener.start()
      // The first load does not wait for LISTEN: a database that allows reads but not
      // LISTEN (a pooler misconfiguration) still gives a ready instance, and a warning.
      requestReload()
      unheardCheck = startUnheardCheck({
        sql,
        logger,
        intervalMs: options.unheardCheckIntervalMs ?? UNHEARD_CHECK_INTERVAL_MS,
        timeoutMs: reloadTimeoutMs,
        revisionsToCheck: () =>
          !closed && !reloading && reloadTimer === undefined && !listener.isListening()
            ? knownRevisions
            : undefined,
        onMoved: requestReload,
        onUnchanged(known) {
          // Nothing moved: the snapshot in service is as fresh as this read.
          if (knownRevisions === known) lastSuccessAt = Date.now()
        },
      })
    },
    async close() {
      closed = true
      reloadTimer?.cancel()
      unheardCheck?.stop()
      await listener.close()
      await worker.close()
    },
  }
}
