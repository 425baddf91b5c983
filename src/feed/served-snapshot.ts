import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import type { Snapshot, SnapshotOrigin, SnapshotSource } from '../snapshot/types.js'
import type { StoredSnapshot } from '../snapshot-file/read-snapshot-file.js'
import { createWindowTimer } from './window-timer.js'

/** The file's snapshot, and how long after its last confirmation it may be served. */
export interface StoredSnapshotWithBound extends StoredSnapshot {
  readonly maxAgeMs: number
}

/** The snapshot in service and who is told when it changes; the feed says where it was read. */
export interface ServedSnapshot extends Pick<SnapshotSource, 'current' | 'onSwap'> {
  /** Puts `next` (read from `origin`) in service, unless it is the one there, and tells everyone. */
  swap(next: Snapshot, origin: SnapshotOrigin): void
  /** Stops the window timer; nothing is swapped in by time any more. */
  close(): void
}

/**
 * The feed's face to the routes and event streams. It also owns the **Windows** (window-timer.ts):
 * at the next instant an item's window opens or closes, the snapshot in service is made again,
 * with no database change and whether or not the database answers.
 */
export function createServedSnapshot(deps: {
  readonly logger: Logger
  readonly metrics: Metrics
  /** Where the snapshot in service was read (the feed's state). */
  origin(): SnapshotOrigin | undefined
}): ServedSnapshot {
  const { logger, metrics } = deps
  let served: Snapshot | undefined
  let closed = false
  const listeners = new Set<(snapshot: Snapshot) => void>()
  const windows = createWindowTimer({
    current: () => served,
    swap: (next) => swap(next, deps.origin() ?? 'database'),
  })

  function swap(next: Snapshot, origin: SnapshotOrigin): void {
    metrics.snapshotLoaded.set(1)
    metrics.snapshotFromFile.set(origin === 'file' ? 1 : 0)
    // Nothing changed: the build handed back the snapshot in service.
    if (next === served) return
    served = next
    logger.info({ apps: next.appKeys.length, source: origin }, 'snapshot loaded')
    if (!closed) windows.arm(next)
    for (const listener of listeners) listener(next)
  }

  return {
    current: () => served,
    onSwap(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    swap,
    close() {
      closed = true
      windows.clear()
    },
  }
}

/**
 * When the database cannot be reached: the stored snapshot, unless it was last confirmed longer
 * ago than its bound, which is said the first time. The age runs from the last confirmation, so
 * data unchanged for months are still current.
 */
export function createStoredSnapshotGate(
  stored: StoredSnapshotWithBound | undefined,
  logger: Logger,
): () => StoredSnapshot | undefined {
  let staleSaid = false
  return () => {
    if (stored === undefined) return undefined
    const { snapshot, confirmedAt, maxAgeMs } = stored
    if (Date.now() - confirmedAt.getTime() > maxAgeMs) {
      if (!staleSaid)
        logger.warn(
          { loadedAt: snapshot.loadedAt, confirmedAt, maxAgeS: Math.round(maxAgeMs / 1000) },
          'the database cannot be reached and the snapshot file was last confirmed longer ago than SNAPSHOT_FILE_MAX_AGE_S: not serving it; waiting for the database',
        )
      staleSaid = true
      return undefined
    }
    logger.warn(
      { loadedAt: snapshot.loadedAt, confirmedAt },
      'the database cannot be reached: serving the snapshot file until it answers',
    )
    return stored
  }
}
