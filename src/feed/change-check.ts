import type { Logger } from 'pino'
import { readRevisionsChangedSince } from '../db/read-snapshot-rows.js'
import { historyOf, revisionInSnapshot } from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'
import type { ListeningConnection } from './listening-connection.js'
import type { ReadConnection } from './read-connection.js'

/** What a check compares the database with: the feed between reloads. */
export interface CheckedPosition {
  readonly snapshot: Snapshot
  /** Where the snapshot's last read (or check) ended (see sql/005_change_xids.sql). */
  readonly watermark: string
  /** The feed's count of reads: tells whether one ran during the check. */
  readonly reads: number
}

/** What a check found; the feed decides what it moves. */
export interface ChangeFound {
  /** Some app's revision, or the history, differs from the snapshot's. */
  readonly moved: boolean
  /** Where the check's read ended: the next read may start here when nothing moved. */
  readonly watermark: string
  readonly fromStandby: boolean
}

/**
 * The check's period: the freshness floor when no notification is heard, and how soon a deaf
 * listening connection is found out.
 */
const CHECK_INTERVAL_MS = 1_000

export interface ChangeCheckOptions {
  readonly reads: ReadConnection
  /** The freshness floor when no notification is heard; one second by default. */
  readonly intervalMs?: number | undefined
  readonly logger: Logger
  /** Where the feed stands, when it is between reloads; undefined otherwise (no check then). */
  idlePosition(): CheckedPosition | undefined
  listener(): ListeningConnection | undefined
  /** LISTEN is in place: a change it did not announce tells that the connection went deaf. */
  listening(): boolean
  /** A standby that lags past the replay wait shows changes long after they were announced. */
  standbyBehind(): boolean
  /** What the check found, from the position it started at. */
  onChecked(found: ChangeFound, from: CheckedPosition): void
}

/**
 * The feed's **Checking** state, every second while it is idle: which apps changed since
 * the last read? The feed reloads a change found, and takes nothing found as a confirmation; if
 * nothing was heard about a change an interval later either, the listening connection is deaf
 * and is made again. One small indexed query, empty when nothing changed.
 */
export function startChangeCheck(options: ChangeCheckOptions): { stop(): void } {
  const { logger } = options
  const intervalMs = options.intervalMs ?? CHECK_INTERVAL_MS
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  // The listening connection's count when a check found a change no notification announced.
  let unannouncedAt: number | undefined

  async function check(): Promise<void> {
    const from = options.idlePosition()
    if (from !== undefined) {
      const listener = options.listener()
      const announcedBefore = listener?.announcedCount()
      try {
        const found = await options.reads.run((sql) =>
          readRevisionsChangedSince(sql, from.watermark),
        )
        // Another history (a failover): the watermark and revisions say nothing; compare it all.
        const moved =
          found.history !== historyOf(from.snapshot) ||
          [...found.revisions].some(
            ([appKey, revision]) =>
              revisionInSnapshot(from.snapshot, appKey) !== (revision ?? undefined),
          )
        const announced = listener?.announcedCount()
        // Nothing announced for an interval since a change was found unannounced: deaf.
        if (unannouncedAt !== undefined && unannouncedAt === announced) listener?.recycleDeaf()
        const announcedEarlier = found.fromStandby && options.standbyBehind()
        unannouncedAt =
          moved && announced === announcedBefore && options.listening() && !announcedEarlier
            ? announced
            : undefined
        options.onChecked(
          { moved, watermark: found.watermark, fromStandby: found.fromStandby },
          from,
        )
      } catch (error) {
        // Reloads report an unreachable database; this check only waits for it to return.
        logger.debug({ err: error }, 'the change check failed')
      }
    }
    if (!stopped) timer = setTimeout(() => void check(), intervalMs)
  }

  timer = setTimeout(() => void check(), intervalMs)
  return {
    stop() {
      stopped = true
      clearTimeout(timer)
    },
  }
}
