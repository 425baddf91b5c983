import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import { assembleSnapshot } from '../snapshot/build.js'
import type { SnapshotOrigin, SnapshotSource } from '../snapshot/types.js'
import { type ChangeFound, type CheckedPosition, startChangeCheck } from './change-check.js'
import { type ListeningConnection, startListening } from './listening-connection.js'
import { readChangedApps } from './read-changed-apps.js'
import { createReadConnection } from './read-connection.js'
import { createReloadOutcomes } from './reload-outcomes.js'
import { foldRequests, type ReloadRequest } from './reload-request.js'
import { createReplayWait } from './replay-wait.js'
import {
  createServedSnapshot,
  createStoredSnapshotGate,
  type StoredSnapshotWithBound,
} from './served-snapshot.js'

export interface SnapshotFeedOptions {
  /** Where snapshots are read (DATABASE_URL): the primary, a pooler or a standby. */
  readonly readUrl: string
  /** Session-mode connection string to the primary, for LISTEN (FEED_DATABASE_URL). */
  readonly feedUrl: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** The snapshot file's (snapshot-file/): the first read's base, served while the database is not. */
  readonly stored?: StoredSnapshotWithBound
  /** Told what each read found before it is put in service (tests commit during a reload). */
  readonly onRead?: (read: {
    complete: boolean
    appKeys: readonly string[]
  }) => Promise<void> | void
  /** How often the database is checked for changes no notification announced. */
  readonly checkIntervalMs?: number
  /** The defaults of read-connection.ts, replay-wait.ts and listening-connection.ts; tests shorten them. */
  readonly readTimeoutMs?: number
  readonly replayWaitMaxMs?: number
  readonly standbyModeAfterMs?: number
  /** The clock (ms) of the outages' log lines (db/outage-log.ts); tests pass their own. */
  readonly now?: () => number
}

export interface SnapshotFeed extends SnapshotSource {
  /** Asks for a reload, as a notification would (waiting for a standby to replay, too). */
  requestReload(): void
  /** Starts listening and loading; returns at once, the first load runs in the background. */
  start(): void
  /** The database cannot be reached: serves the stored snapshot if nothing is (served-snapshot.ts). */
  serveStored(): boolean
  close(): Promise<void>
}

/**
 * Where the feed stands, in one field, moved only by `on`'s events. `name` is the reload loop;
 * reloads run one at a time and what is asked meanwhile waits in `pending`.
 * - `stopped`: not started yet (the schema is being prepared); `closed`: for good.
 * - `idle`: the snapshot is as fresh as the last read; the check runs every second.
 * - `reloading`: waiting for a standby to replay (replay-wait.ts), then reading what changed and
 *   building it, in chunks that yield to the event loop; a reload asked for meanwhile runs next.
 * - `backingOff`: the last reload failed; the snapshot in service is kept and the reload tried
 *   again after a capped, jittered backoff. A notification waits for it; a new LISTEN, or a
 *   check that reached the database, does not.
 * `serving`: nothing yet, the snapshot file (until the database is read), or a read of it.
 * `listening`: LISTEN is in place (listening-connection.ts), so changes are announced.
 */
type FeedState = {
  readonly serving: 'nothing' | SnapshotOrigin
  readonly listening: boolean
} & (
  | { readonly name: 'stopped' | 'idle' | 'reloading' | 'closed' }
  | { readonly name: 'backingOff'; readonly timer: NodeJS.Timeout }
)

type FeedEvent =
  | { readonly type: 'start' }
  | { readonly type: 'reloadAsked'; readonly proven: boolean }
  | { readonly type: 'reloadsEnded'; readonly retryInMs: number | undefined }
  | { readonly type: 'served'; readonly origin: SnapshotOrigin }
  | { readonly type: 'listening'; readonly listening: boolean }
  | { readonly type: 'close' }

/** What a check starts from: the count of reads tells whether one ran meanwhile. */
type IdlePosition = CheckedPosition & { readonly reads: number }

/**
 * Keeps an immutable snapshot of the database fresh, in the shape of graphile-worker's
 * `listenForChanges`. Besides the feed's state, and the windows (served-snapshot.ts):
 * - **Listening** (listening-connection.ts): a complete reload follows each LISTEN put in place,
 *   since notifications sent meanwhile are lost; each notification asks for a reload.
 * - **Checking** (change-check.ts), every second while idle, for changes no notification announced.
 */
export function createSnapshotFeed(options: SnapshotFeedOptions): SnapshotFeed {
  const { logger, metrics, stored } = options
  let state: FeedState = { name: 'stopped', serving: 'nothing', listening: false }
  let pending: ReloadRequest | undefined
  // An instance that reads the primary (no FEED_DATABASE_URL of its own) reads only a primary,
  // until standby mode: after a failover it never serves what a server in recovery holds.
  const readsPrimary = options.readUrl === options.feedUrl
  let listener: ListeningConnection | undefined
  const reads = createReadConnection(options.readUrl, {
    primaryOnly: () => readsPrimary && listener?.inStandbyMode() !== true,
    deadlineMs: options.readTimeoutMs,
  })
  const outcomes = createReloadOutcomes({ logger, metrics, now: options.now })
  const origin = () => (state.serving === 'nothing' ? undefined : state.serving)
  const served = createServedSnapshot({ logger, metrics, origin })
  // Where the feed stands in the database; only its reloads, and what its checks find, move it.
  // - watermark: where the next incremental read starts (sql/005_change_xids.sql);
  // - fromStandby: of the last read; confirmedAt: when the snapshot in service last matched (ms).
  const position = {
    watermark: undefined as string | undefined,
    fromStandby: undefined as boolean | undefined,
    confirmedAt: null as number | null,
    reads: 0, // reads that brought a snapshot: a check tells that one ran meanwhile
  }
  const storedToServe = createStoredSnapshotGate(stored, logger)
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

  /** The reload loop's `name`, the rest as it stands; a backoff's timer has fired or is cleared. */
  function enter(name: 'idle' | 'reloading' | 'closed'): void {
    state = { name, serving: state.serving, listening: state.listening }
  }

  function on(event: FeedEvent): void {
    switch (event.type) {
      case 'start':
        if (state.name !== 'stopped') return
        enter('idle')
        startListeningAndChecking()
        return
      case 'reloadAsked':
        if (state.name === 'backingOff' && event.proven) clearTimeout(state.timer)
        else if (state.name !== 'idle') return
        enter('reloading')
        reloadLoop = reloadWhilePending()
        return
      case 'reloadsEnded':
        if (state.name !== 'reloading') return
        if (event.retryInMs === undefined) enter('idle')
        else {
          const retry = () => on({ type: 'reloadAsked', proven: true })
          const timer = setTimeout(retry, event.retryInMs)
          state = { ...state, name: 'backingOff', timer }
        }
        return
      case 'served':
        state = { ...state, serving: event.origin }
        return
      case 'listening':
        state = { ...state, listening: event.listening }
        return
      case 'close':
        if (state.name === 'backingOff') clearTimeout(state.timer)
        enter('closed')
        return
    }
  }

  /** `proven`: the database was just reached, so a retry's backoff need not be waited out. */
  function requestReload(request: Partial<ReloadRequest> & { proven?: boolean }): void {
    pending = foldRequests(pending, request)
    on({ type: 'reloadAsked', proven: request.proven === true })
  }

  async function reloadWhilePending(): Promise<void> {
    let retryInMs: number | undefined
    try {
      while (pending !== undefined && !closing.signal.aborted) {
        const request = pending
        pending = undefined
        retryInMs = await reloadOnce(request)
        if (retryInMs !== undefined) {
          // Not lost: tried again after the backoff, with what was asked meanwhile.
          pending = foldRequests(pending as ReloadRequest | undefined, {
            complete: request.complete,
          })
          break
        }
      }
    } finally {
      on({ type: 'reloadsEnded', retryInMs })
    }
  }

  /** One reload; the backoff before the next attempt when it failed. */
  async function reloadOnce(request: ReloadRequest): Promise<number | undefined> {
    if (request.announced) await replayWait.untilReplayed(position.fromStandby)
    const startedAt = performance.now()
    const readAt = new Date()
    // The stored snapshot is the base of the first read: only what changed since is read.
    const base = served.current() ?? stored?.snapshot
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
        renew: state.serving !== 'database',
      })
      position.watermark = found.watermark
      position.confirmedAt = Date.now()
      outcomes.succeeded(startedAt)
      on({ type: 'served', origin: 'database' })
      served.swap(next, 'database')
      return undefined
    } catch (error) {
      if (closing.signal.aborted) return undefined // ended by the shutdown: no failure
      const retryInMs = outcomes.failed(error, startedAt, state.serving !== 'nothing')
      serveStored()
      return retryInMs
    }
  }

  function serveStored(): boolean {
    if (state.name === 'closed' || state.serving !== 'nothing') return state.serving === 'file'
    const usable = storedToServe()
    if (usable === undefined) return false
    position.confirmedAt = usable.confirmedAt.getTime()
    on({ type: 'served', origin: 'file' })
    served.swap(usable.snapshot, 'file')
    return true
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

  function startListeningAndChecking(): void {
    listener = startListening({
      url: options.feedUrl,
      logger,
      metrics,
      onListen: () => requestReload({ complete: true, proven: true, announced: true }),
      onNotify: () => requestReload({ announced: true }),
      onListening: (listening) => on({ type: 'listening', listening }),
      standbyModeAfterMs: options.standbyModeAfterMs,
      now: options.now,
      onListenFailed(error) {
        outcomes.listenFailed(error)
        // The first load does not wait for LISTEN: a database that allows reads but not
        // LISTEN (a pooler misconfiguration) still gives a ready instance.
        if (state.serving !== 'database') requestReload({ complete: true })
      },
    })
    check = startChangeCheck({
      reads,
      intervalMs: options.checkIntervalMs,
      logger,
      idlePosition,
      listener: () => listener,
      listening: () => state.listening,
      standbyBehind: () => replayWait.isBehind(),
      onChecked: moveByCheck,
    })
  }

  return {
    current: served.current,
    origin,
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
    start: () => on({ type: 'start' }),
    async close() {
      on({ type: 'close' })
      closing.abort()
      check?.stop()
      served.close()
      await listener?.close()
      await reads.close()
      await reloadLoop
    },
  }
}
