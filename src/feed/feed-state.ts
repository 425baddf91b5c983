import type { SnapshotOrigin } from '../snapshot/types.js'

/**
 * Where the feed stands, in one field that only `on` moves. `name` is the reload loop, which runs
 * one reload at a time; what is asked meanwhile waits in `pending`.
 * - `stopped` while the schema is prepared (`awaiting`: what it lacks); `closed` for good;
 * - `idle`: as fresh as the last read; the check runs every second;
 * - `reloading`: waiting for a standby to replay (replay-wait.ts), then reading what changed and
 *   building it in chunks that yield to the event loop;
 * - `backingOff`: the last reload failed; the snapshot in service is kept and the reload tried
 *   after a capped, jittered backoff, which a notification waits out and a new LISTEN, or a check
 *   that reached the database, does not.
 * `serving`: nothing yet, the snapshot file (until the database is read), or a read of it;
 * `listening`: LISTEN is in place (listening-connection.ts), so changes are announced.
 */
export type FeedState = {
  readonly serving: 'nothing' | SnapshotOrigin
  readonly listening: boolean
} & (
  | { readonly name: 'stopped'; readonly awaiting: string | null }
  | { readonly name: 'idle' | 'reloading' | 'closed' }
  | { readonly name: 'backingOff'; readonly timer: NodeJS.Timeout }
)

/** What moves the feed: `on` in snapshot-feed.ts takes each in one `switch`. */
export type FeedEvent =
  | { readonly type: 'start' }
  | { readonly type: 'schemaAwaited'; readonly reason: string | null }
  | { readonly type: 'reloadAsked'; readonly proven: boolean }
  | { readonly type: 'reloadsEnded'; readonly retryInMs: number | undefined }
  | { readonly type: 'served'; readonly origin: SnapshotOrigin }
  | { readonly type: 'listening'; readonly listening: boolean }
  | { readonly type: 'close' }
