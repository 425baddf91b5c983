import type { Snapshot } from '../snapshot/types.js'

/** What the routes need of the feed: the snapshot in service, why there is none, and its swaps. */
export interface SnapshotSource {
  current(): Snapshot | undefined
  notReadyReason(): string
  snapshotAgeSeconds(): number | null
  /** Called after every swap to a new snapshot; returns an unsubscribe function. */
  onSwap(listener: (snapshot: Snapshot) => void): () => void
}
