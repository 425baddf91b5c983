import type { SnapshotRows } from '../../src/db/snapshot-rows.js'
import { recordApp } from '../../src/snapshot/app-record.js'
import { groupRowsByApp } from '../../src/snapshot/app-rows.js'
import { type AssembleOptions, assembleSnapshot, recordsOf } from '../../src/snapshot/build.js'
import type { Snapshot } from '../../src/snapshot/types.js'

export interface BuildSnapshotOptions extends Omit<AssembleOptions, 'removedApps'> {
  /** False: the rows hold only apps changed since `previous` (the rest are kept). Default true. */
  readonly complete?: boolean
  /** Apps deleted since `previous` (incremental reads). */
  readonly removedApps?: readonly string[]
}

/**
 * Rows to a snapshot in one go, for tests and the benchmark: each app read is recorded, then
 * assembled on top of `previous`. The feed records its reads in chunks and assembles them itself.
 */
export function buildSnapshot(rows: SnapshotRows, options: BuildSnapshotOptions = {}): Snapshot {
  const { complete = true, removedApps = [], ...rest } = options
  const held = options.previous === undefined ? undefined : recordsOf(options.previous)
  const records = groupRowsByApp(rows).map((appRows) =>
    recordApp(appRows, held?.get(appRows.app.appKey)),
  )
  const read = new Set(records.map((record) => record.appKey))
  const previousKeys = options.previous?.appKeys ?? []
  const removed = complete ? previousKeys.filter((appKey) => !read.has(appKey)) : removedApps
  return assembleSnapshot(records, { ...rest, removedApps: removed })
}
