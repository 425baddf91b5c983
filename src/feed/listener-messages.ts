import type { AppRevisions, SnapshotRead } from '../db/read-snapshot-rows.js'

/** The channel the schema's triggers notify (sql/001_schema.sql). */
export const CHANGE_CHANNEL = 'shell_changed'
/** Payload prefix of the feed's own liveness probes: not a change, never a reload. */
export const PROBE_PREFIX = 'probe:'

/** A change's rows, read in the listener thread as soon as its notification arrived. */
export interface PrefetchedRead {
  /** The known revisions the read compared against (`ToListenerThread` `known`). */
  readonly generation: number
  readonly read: SnapshotRead
  /** How long the read took, so that the reload's duration still counts it. */
  readonly readMs: number
}

/** What an error keeps across the thread boundary: enough for the logs and for SQLSTATE checks. */
export interface CarriedError {
  readonly name: string
  readonly message: string
  readonly code?: string
  readonly stack?: string
}

export type ToListenerThread =
  /** Opens a listening connection to `url`; `id` names it in every later message. */
  | { readonly type: 'listen'; readonly id: number; readonly url: string }
  | { readonly type: 'end'; readonly id: number; readonly timeoutS: number }
  /** The revisions of the snapshot in service: a change is read against them. */
  | { readonly type: 'known'; readonly generation: number; readonly revisions: AppRevisions }
  /** Ends every connection; the thread answers `closed`. */
  | { readonly type: 'close' }

export type FromListenerThread =
  /** LISTEN is in place: the first time, and after every reconnect the driver makes. */
  | { readonly type: 'listening'; readonly id: number }
  | { readonly type: 'listen-failed'; readonly id: number; readonly error: CarriedError }
  | { readonly type: 'ended'; readonly id: number }
  | { readonly type: 'closed' }
  | { readonly type: 'probe'; readonly id: number; readonly payload: string }
  /** A change was committed; its rows come along when they could be read at once. */
  | { readonly type: 'change'; readonly id: number; readonly prefetched?: PrefetchedRead }

export function carryError(error: unknown): CarriedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) }
  const { code } = error as { code?: unknown }
  return {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(error.stack === undefined ? {} : { stack: error.stack }),
  }
}

export function restoreError(carried: CarriedError): Error {
  const error = new Error(carried.message)
  error.name = carried.name
  if (carried.stack !== undefined) error.stack = carried.stack
  return carried.code === undefined ? error : Object.assign(error, { code: carried.code })
}
