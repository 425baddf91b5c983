import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import { assembleSnapshot } from '../snapshot/build.js'
import type { SnapshotSource } from '../snapshot/types.js'
import { type ChangeFound, type CheckedPosition, startChangeCheck } from './change-check.js'
import { type ListeningConnection, startListening } from './listening-connection.js'
import { readChangedApps } from './read-changed-apps.js'
import { createReadConnection } from './read-connection.js'
import { createReloadOutcomes } from './reload-outcomes.js'
import { foldRequests, type ReloadRequest } from './reload-request.js'
import { createReplayWait } from './replay-wait.js'
import { createServedSnapshot, type StoredSnapshotWithBound } from './served-snapshot.js'

export interface SnapshotFeedOptions {
  /** Where snapshots are read (DATABASE_URL): the primary, a pooler or a standby. */
  readonly readUrl: string
  /** Session-mode connection string to the primary, for LISTEN (FEED_DATABASE_URL). */
  readonly feedUrl: string
  readonly logger: Logger
  readonly metrics: Metrics
  /**
   * The snapshot this instance kept in its file (snapshot-file/): the base of the first read, and
   * what is served while the database cannot be reached, unless last confirmed over `maxAgeMs` ago.
   */
  readonly stored?: StoredSnapshotWithBound
  /** Told what each read found before it is put in service (tests commit during a reload). */
  readonly onRead?: (read: {
    complete: boolean
    appKeys: readonly string[]
  }) => Promise<void> | void
  /** How often the database is checked for changes no notification announced. */
  readonly checkIntervalMs?: number
  /** How long a read may take before it is given up as failed (a connection gone silent). */
  readonly readTimeoutMs?: number
  /** How long a reload waits at most for a standby to replay a notified commit (replay-wait.ts). */
  readonly replayWaitMaxMs?: number
  /** Only servers in recovery for this long: standby mode (listening-connection.ts; a minute). */
  readonly standbyModeAfterMs?: number
  /** The clock (ms) of the outages' log lines (db/outage-log.ts); tests pass their own. */
  readonly now?: () => number
}

export interface SnapshotFeed extends SnapshotSource {
  /** Asks for a reload, as a notification would (waiting for a standby to replay, too). */
  requestReload(): void
  /** Starts listening and loading; returns at once, the first load runs in the background. */
  start(): void
  /**
   * The database cannot be reached: with no snapshot in service yet, serves the stored one unless
   * it is too old, until a read of the database catches up. True when it did.
   */
  serveStored(): boolean
  close(): Promise<void>
}

/**
 * The reload loop's state. Reloads run one at a time; what is asked meanwhile waits in `pending`.
 * - `stopped`: not started yet; `closed`: for good.
 * - `idle`: the snapshot is as fresh as the last read; the check runs every second.
 * - `reloading`: waiting for a standby to replay (replay-wait.ts), then reading what changed and
 *   building it, in chunks that yield to the event loop; a reload asked for meanwhile runs next.
 * - `backingOff`: the last reload failed; the snapshot in service is kept and the reload tried
 *   again after a capped, jittered backoff. A notification waits for it; a new LISTEN, or a
 *   check that reached the database, does not.
 */
type FeedState =
  | { readonly name: 'stopped' | 'idle' | 'reloading' | 'closed' }
  | { readonly name: 'backingOff'; readonly timer: NodeJS.Timeout }

/** What a check starts from: the count of reads tells whether one ran meanwhile. */
type IdlePosition = CheckedPosition & { readonly reads: number }

/**
 * Keeps an immutable snapshot of the database fresh, in the shape of graphile-worker's
 * `listenForChanges`. Besides the reload loop (FeedState) and the windows (served-snapshot.ts):
 * - **Listening** (listening-connection.ts): a complete reload follows each LISTEN put in place,
 *   since notifications sent meanwhile are lost; each notification asks for a reload.
 * - **Checking** (change-check.ts), every second while idle, for changes no notification announced.
 */
export function createSnapshotFeed(options: SnapshotFeedOptions): SnapshotFeed {
  const { logger, metrics } = options
  // An instance that reads the primary (no FEED_DATABASE_URL of its own) reads only a primary,
  // until standby mode: after a failover it never serves what a server in recovery holds.
  const readsPrimary = options.readUrl === options.feedUrl
  let listener: ListeningConnection | undefined
  const reads = createReadConnection(options.readUrl, {
    primaryOnly: () => readsPrimary && listener?.inStandbyMode() !== true,
    deadlineMs: options.readTimeoutMs,
  })
  const outcomes = createReloadOutcomes({ logger, metrics, now: options.now })

  let state: FeedState = { name: 'stopped' }
  let pending: ReloadRequest | undefined
  const served = createServedSnapshot({ logger, metrics, stored: options.stored })
  // Where the feed stands in the database; only its reloads, and what its checks find, move it.
  // - watermark: where the next incremental read starts (sql/005_change_xids.sql);
  // - fromStandby: of the last read; confirmedAt: when the snapshot in service last matched (ms).
  const position = {
    watermark: undefined as string | undefined,
    fromStandby: undefined as boolean | undefined,
    confirmedAt: null as number | null,
    reads: 0, // reads that brought a snapshot: a check tells that one ran meanwhile
  }
  let check: { stop(): void } | undefined
  let reloadLoop: Promise<void> | undefined // close() awaits it: a reload ending then is swapped in

  const closing = new AbortController()
  const replayWait = createReplayWait({
    onStandby: (read, deadlineMs) => reads.run(read, deadlineMs),
    onPrimary: (read) => listener?.withConnection(read) ?? Promise.reject(new Error('not started')),
    logger,
    metrics,
    signal: closing.signal,
    maxWaitMs: options.replayWaitMaxMs,
  })

  /** `proven`: the database was just reached, so a retry's backoff need not be waited out. */
  function requestReload(request: Partial<ReloadRequest> & { proven?: boolean }): void {
    pending = foldRequests(pending, request)
    switch (state.name) {
      case 'stopped':
      case 'closed':
      case 'reloading':
        return
      case 'backingOff':
        if (request.proven !== true) return
        clearTimeout(state.timer)
        reloadLoop = reloadWhilePending()
        return
      case 'idle':
        reloadLoop = reloadWhilePending()
        return
    }
  }

  async function reloadWhilePending(): Promise<void> {
    state = { name: 'reloading' }
    let retryInMs: number | undefined
    try {
      while (pending !== undefined && !closing.signal.aborted) {
        const request = pending
        pending = undefined
        const failed = await reloadOnce(request)
        if (failed !== undefined) {
          // Not lost: tried again after the backoff, with what was asked meanwhile.
          pending = foldRequests(pending as ReloadRequest | undefined, {
            complete: request.complete,
          })
          retryInMs = failed
          break
        }
      }
    } finally {
      if (closing.signal.aborted) state = { name: 'closed' }
      else if (retryInMs === undefined) state = { name: 'idle' }
      else state = { name: 'backingOff', timer: setTimeout(retryReload, retryInMs) }
    }
  }

  function retryReload(): void {
    if (state.name !== 'backingOff') return
    state = { name: 'idle' }
    requestReload({ proven: true })
  }

  /** One reload; the backoff before the next attempt when it failed. */
  async function reloadOnce(request: ReloadRequest): Promise<number | undefined> {
    if (request.announced) await replayWait.untilReplayed(position.fromStandby)
    const startedAt = performance.now()
    const readAt = new Date()
    // The stored snapshot is the base of the first read: only what changed since is read.
    const base = served.current() ?? options.stored?.snapshot
    const since = request.complete ? undefined : position.watermark
    try {
      const { found, records, removedApps } = await reads.run((sql) =>
        readChangedApps(sql, base, since),
      )
      position.reads += 1
      position.fromStandby = found.fromStandby
      await options.onRead?.({
        complete: found.complete,
        appKeys: records.map((record) => record.appKey),
      })
      const next = assembleSnapshot(records, {
        ...(base && { previous: base }),
        removedApps,
        loadedAt: readAt,
        dataset: found.dataset,
        history: found.history,
        // Caught up from the file: served as read now, even where nothing changed.
        renew: served.origin() !== 'database',
      })
      position.watermark = found.watermark
      position.confirmedAt = Date.now()
      outcomes.succeeded(startedAt)
      served.swap(next, 'database')
      return undefined
    } catch (error) {
      if (closing.signal.aborted) return undefined // ended by the shutdown: no failure
      const retryInMs = outcomes.failed(error, startedAt, served.current() !== undefined)
      // Never reached since the start: what the file holds is served meanwhile.
      if (served.current() === undefined) serveStored()
      return retryInMs
    }
  }

  function idlePosition(): IdlePosition | undefined {
    const snapshot = served.current()
    const { watermark, reads } = position
    if (state.name !== 'idle' || snapshot === undefined || watermark === undefined) return undefined
    return { snapshot, watermark, reads }
  }

  /** A change found is reloaded; none, with no read or swap meanwhile, confirms the snapshot. */
  function moveByCheck(found: ChangeFound, from: IdlePosition): void {
    position.fromStandby = found.fromStandby
    if (found.moved) requestReload({ proven: true })
    else if (from.reads === position.reads && idlePosition()?.snapshot === from.snapshot) {
      position.watermark = found.watermark
      position.confirmedAt = Date.now()
    }
  }

  function serveStored(): boolean {
    if (state.name === 'closed') return false
    const stored = served.serveStored()
    if (stored !== undefined) position.confirmedAt = stored.confirmedAt.getTime()
    return stored !== undefined
  }

  return {
    current: served.current,
    origin: served.origin,
    onSwap: served.onSwap,
    notReadyReason: () =>
      state.name === 'closed'
        ? 'shutting down'
        : outcomes.lastError() === null
          ? 'loading the first snapshot'
          : `database unavailable (${outcomes.lastError()})`,
    snapshotAgeSeconds: () =>
      position.confirmedAt === null ? null : (Date.now() - position.confirmedAt) / 1000,
    confirmedAt: () => (position.confirmedAt === null ? undefined : new Date(position.confirmedAt)),
    requestReload: () => requestReload({ proven: true, announced: true }),
    serveStored,
    start() {
      if (state.name !== 'stopped') return
      state = { name: 'idle' }
      listener = startListening({
        url: options.feedUrl,
        logger,
        metrics,
        onListen: () => requestReload({ complete: true, proven: true, announced: true }),
        onNotify: () => requestReload({ announced: true }),
        standbyModeAfterMs: options.standbyModeAfterMs,
        now: options.now,
        onListenFailed(error) {
          outcomes.listenFailed(error)
          // The first load does not wait for LISTEN: a database that allows reads but not
          // LISTEN (a pooler misconfiguration) still gives a ready instance.
          if (served.origin() !== 'database') requestReload({ complete: true })
        },
      })
      check = startChangeCheck({
        reads,
        intervalMs: options.checkIntervalMs,
        logger,
        idlePosition,
        listener: () => listener,
        standbyBehind: () => replayWait.isBehind(),
        onChecked: moveByCheck,
      })
    },
    async close() {
      if (state.name === 'backingOff') clearTimeout(state.timer)
      state = { name: 'closed' }
      closing.abort()
      check?.stop()
      served.close()
      await listener?.close()
      await reads.close()
      await reloadLoop
    },
  }
}
