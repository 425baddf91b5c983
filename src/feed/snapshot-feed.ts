import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import type { SnapshotSource } from '../snapshot/types.js'
import { type ChangeFound, type CheckedPosition, startChangeCheck } from './change-check.js'
import type { FeedEvent, FeedState } from './feed-state.js'
import { type ListeningConnection, startListening } from './listening-connection.js'
import { type OnRead, readChangedSnapshot } from './read-changed-apps.js'
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
  /** DATABASE_URL, where snapshots are read, and FEED_DATABASE_URL (the primary), for LISTEN. */
  readonly readUrl: string
  readonly feedUrl: string
  readonly logger: Logger
  readonly metrics: Metrics
  /** The snapshot file's (snapshot-file/): the first read's base, served while the database is not. */
  readonly stored?: StoredSnapshotWithBound
  /** Told what each read found before it is put in service (tests commit during a reload). */
  readonly onRead?: OnRead
  /** Defaults of change-check.ts, read-connection.ts, replay-wait.ts, listening-connection.ts. */
  readonly checkIntervalMs?: number
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
  /** Before the start, what the schema lacks (database-preparation.ts): /readyz says it. */
  awaitSchema(reason: string | null): void
  /** The database cannot be reached: serves the stored snapshot if nothing is (served-snapshot.ts). */
  serveStored(): boolean
  close(): Promise<void>
}

/**
 * Keeps an immutable snapshot of the database fresh, in the shape of graphile-worker's
 * `listenForChanges`: each notification asks for a reload, and each LISTEN put in place for a
 * complete one (notifications sent meanwhile are lost); the check (change-check.ts) finds, every
 * second while idle, the changes no notification announced.
 */
export function createSnapshotFeed(options: SnapshotFeedOptions): SnapshotFeed {
  const { logger, metrics, stored } = options
  let state: FeedState = { name: 'stopped', awaiting: null, serving: 'nothing', listening: false }
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
  const position = {
    watermark: undefined as string | undefined, // where the next read starts (sql/005)
    fromStandby: undefined as boolean | undefined, // the last read's
    confirmedAt: null as number | null, // when the snapshot in service last matched (ms)
    reads: 0, // reads that brought a snapshot: a check tells that one ran meanwhile
  }
  const storedToServe = createStoredSnapshotGate(stored, logger)
  let check: { stop(): void } | undefined
  let reloadLoop: Promise<void> | undefined // close() awaits it: a reload ending then is swapped in

  const closing = new AbortController()
  const replayWait = createReplayWait({
    onStandby: reads.run,
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
      case 'schemaAwaited':
        if (state.name === 'stopped') state = { ...state, awaiting: event.reason }
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
    try {
      const { found, snapshot } = await reads.run((sql) =>
        readChangedSnapshot(sql, {
          base,
          since: request.complete ? undefined : position.watermark,
          readAt,
          // Caught up from the file: served as read now, even where nothing changed.
          renew: state.serving !== 'database',
          onRead: options.onRead,
        }),
      )
      position.reads += 1
      position.fromStandby = found.fromStandby
      position.watermark = found.watermark
      position.confirmedAt = Date.now()
      outcomes.succeeded(startedAt)
      on({ type: 'served', origin: 'database' })
      served.swap(snapshot, 'database')
      return undefined
    } catch (error) {
      if (closing.signal.aborted) return undefined // ended by the shutdown: no failure
      const retryInMs = outcomes.failed(error, startedAt, state.serving !== 'nothing')
      serveStored()
      return retryInMs
    }
  }

  function serveStored(): boolean {
    const usable =
      state.name === 'closed' || state.serving !== 'nothing' ? undefined : storedToServe()
    if (usable !== undefined) {
      position.confirmedAt = usable.confirmedAt.getTime()
      on({ type: 'served', origin: 'file' })
      served.swap(usable.snapshot, 'file')
    }
    return state.serving === 'file'
  }

  function idlePosition(): CheckedPosition | undefined {
    const snapshot = served.current()
    const { watermark, reads } = position
    if (state.name !== 'idle' || snapshot === undefined || watermark === undefined) return undefined
    return { snapshot, watermark, reads }
  }

  /** A change found is reloaded; none, with no read or swap meanwhile, confirms the snapshot. */
  function moveByCheck(found: ChangeFound, from: CheckedPosition): void {
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
    notReadyReason() {
      if (state.name === 'closed') return 'shutting down'
      if (state.name === 'stopped' && state.awaiting !== null) return state.awaiting
      return outcomes.notReadyReason()
    },
    confirmedAt: () => (position.confirmedAt === null ? undefined : new Date(position.confirmedAt)),
    requestReload: () => requestReload({ proven: true, announced: true }),
    serveStored,
    start: () => on({ type: 'start' }),
    awaitSchema: (reason) => on({ type: 'schemaAwaited', reason }),
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
