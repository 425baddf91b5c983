import type { Snapshot } from '../snapshot/types.js'

/** What the routes need of the feed: the snapshot in service, and why there is none. */
export interface SnapshotSource {
  current(): Snapshot | undefined
  notReadyReason(): string
  snapshotAgeSeconds(): number | null
}
