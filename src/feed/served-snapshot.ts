import type { Logger } from 'pino'
import type { Metrics } from '../metrics.js'
import type { Snapshot, SnapshotOrigin, SnapshotSource } from '../snapshot/types.js'
import type { StoredSnapshot } from '../snapshot-file/read-snapshot-file.js'
import { createWindowTimer } from './window-timer.js'

/** The file's snapshot, and how long after its last confirmation it may be served. */
export interface StoredSnapshotWithBound extends StoredSnapshot {
  readonly maxAgeMs: number
}

/** The snapshot in service, where it was read, and who is told when it changes. */
export interface ServedSnapshot extends Pick<SnapshotSource, 'current' | 'origin' | 'onSwap'> {
  /** Puts `next` in service (nothing, when it is the one in service) and tells every listener. */
  swap(next: Snapshot, origin: SnapshotOrigin): void
  /**
   * With nothing in service yet, puts the stored snapshot in service (`origin` "file") unless its
   * last confirmation is older than its `maxAgeMs`, which is said once; returns it when it did.
   */
  serveStored(): StoredSnapshot | undefined
  /** Stops the window timer; nothing is swapped in by time any more. */
  close(): void
}

/**
 * The feed's face to the routes and event streams. It also owns the **Windows** state
 * (window-timer.ts): at the next instant an item's window opens or closes, the snapshot in
 * service is made again, with no database change and whether or not the database answers.
 */
export function createServedSnapshot(deps: {
  readonly logger: Logger
  readonly metrics: Metrics
  /** The snapshot the instance kept in its file (snapshot-file/), and how old it may be served. */
  readonly stored?: StoredSnapshotWithBound | undefined
}): ServedSnapshot {
  const { logger, metrics, stored } = deps
  // That the stored snapshot is too old to serve was said.
  let staleStoredSaid = false
  let served: { readonly snapshot: Snapshot; readonly origin: SnapshotOrigin } | undefined
  let closed = false
  const listeners = new Set<(snapshot: Snapshot) => void>()
  const windows = createWindowTimer({
    current: () => served?.snapshot,
    swap: (next) => swap(next, served?.origin ?? 'database'),
  })

  function swap(next: Snapshot, origin: SnapshotOrigin): void {
    metrics.snapshotLoaded.set(1)
    metrics.snapshotFromFile.set(origin === 'file' ? 1 : 0)
    // Nothing changed: the build handed back the snapshot in service.
    if (next === served?.snapshot && origin === served.origin) return
    served = { snapshot: next, origin }
    logger.info({ apps: next.appKeys.length, source: origin }, 'snapshot loaded')
    if (!closed) windows.arm(next)
    for (const listener of listeners) listener(next)
  }

  return {
    current: () => served?.snapshot,
    origin: () => served?.origin,
    onSwap(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    swap,
    serveStored() {
      if (served !== undefined || stored === undefined) return undefined
      const { snapshot, confirmedAt, maxAgeMs } = stored
      // The age runs from the last confirmation: data unchanged for months are still current.
      if (Date.now() - confirmedAt.getTime() > maxAgeMs) {
        if (!staleStoredSaid)
          logger.warn(
            { loadedAt: snapshot.loadedAt, confirmedAt, maxAgeS: Math.round(maxAgeMs / 1000) },
            'the database cannot be reached and the snapshot file was last confirmed longer ago than SNAPSHOT_FILE_MAX_AGE_S: not serving it; waiting for the database',
          )
        staleStoredSaid = true
        return undefined
      }
      logger.warn(
        { loadedAt: snapshot.loadedAt, confirmedAt },
        'the database cannot be reached: serving the snapshot file until it answers',
      )
      swap(snapshot, 'file')
      return stored
    },
    close() {
      closed = true
      windows.clear()
    },
  }
}
