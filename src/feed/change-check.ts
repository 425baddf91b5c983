import type { Logger } from 'pino'
import { readRevisionsChangedSince } from '../db/read-snapshot-rows.js'
import { historyOf, revisionInSnapshot } from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'
import type { ListeningConnection } from './listening-connection.js'
import type { ReadConnection } from './read-connection.js'

/** Where the feed's knowledge of the database stands; its reloads and this check move it. */
export interface ReadPosition {
  /** Where the next incremental read starts (see sql/005_change_xids.sql); undefined until a read. */
  watermark: string | undefined
  /** Whether the last read was of a hot standby; undefined before the first. */
  fromStandby: boolean | undefined
  /** When the snapshot in service was last known to match the database (ms since the epoch). */
  confirmedAt: number | null
  /** Reads that brought a snapshot, counted, so a check can tell that one ran meanwhile. */
  reads: number
}

export interface ChangeCheckOptions {
  readonly position: ReadPosition
  readonly reads: ReadConnection
  readonly readTimeoutMs: number
  readonly intervalMs: number
  readonly logger: Logger
  /** The snapshot in service, when the feed is between reloads; undefined otherwise. */
  idleSnapshot(): Snapshot | undefined
  listener(): ListeningConnection | undefined
  /** A standby that lags past the replay wait shows changes long after they were announced. */
  standbyBehind(): boolean
  /** A change was found: reload now. */
  onChangeFound(): void
}

/**
 * The feed's **Checking** state, every `intervalMs` while it is idle: which apps changed since
 * the last read? A change found is reloaded; if nothing was heard about it an interval later
 * either, the listening connection is deaf and is made again. Finding nothing confirms the
 * snapshot as fresh and moves the watermark. One small indexed query, empty when nothing changed.
 */
export function startChangeCheck(options: ChangeCheckOptions): { stop(): void } {
  const { position, logger } = options
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  // The listening connection's count when a check found a change no notification announced.
  let unannouncedAt: number | undefined

  async function check(): Promise<void> {
    const since = position.watermark
    const current = options.idleSnapshot()
    if (since !== undefined && current !== undefined) {
      const readsBefore = position.reads
      const listener = options.listener()
      const announcedBefore = listener?.announcedCount()
      try {
        const found = await options.reads.run(
          (sql) => readRevisionsChangedSince(sql, since),
          options.readTimeoutMs,
        )
        position.fromStandby = found.fromStandby
        // Another history (a failover): the watermark and revisions say nothing; compare it all.
        const moved =
          found.history !== historyOf(current) ||
          [...found.revisions].some(
            ([appKey, revision]) => revisionInSnapshot(current, appKey) !== (revision ?? undefined),
          )
        const announced = listener?.announcedCount()
        // Nothing announced for an interval since a change was found unannounced: deaf.
        if (unannouncedAt !== undefined && unannouncedAt === announced) listener?.recycleDeaf()
        const announcedEarlier = found.fromStandby && options.standbyBehind()
        unannouncedAt =
          moved && announced === announcedBefore && listener?.isListening() && !announcedEarlier
            ? announced
            : undefined
        if (moved) options.onChangeFound()
        else if (position.reads === readsBefore && options.idleSnapshot() === current) {
          // The snapshot matches the database as of this check: the next read may start here.
          position.watermark = found.watermark
          position.confirmedAt = Date.now()
        }
      } catch (error) {
        // Reloads report an unreachable database; this check only waits for it to return.
        logger.debug({ err: error }, 'the change check failed')
      }
    }
    if (!stopped) timer = setTimeout(() => void check(), options.intervalMs)
  }

  timer = setTimeout(() => void check(), options.intervalMs)
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
