import { setImmediate as yieldToEventLoop } from 'node:timers/promises'
import type { Sql } from '../db/connect.js'
import { type ChangesFound, readSnapshotChanges } from '../db/read-snapshot-rows.js'
import { type AppRecord, recordApp } from '../snapshot/app-record.js'
import { groupRowsByApp } from '../snapshot/app-rows.js'
import {
  assembleSnapshot,
  datasetOf,
  historyOf,
  recordsOf,
  revisionInSnapshot,
} from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'

/**
 * The longest a reload builds apps before it yields to the event loop: a reload of thousands of
 * apps is many short tasks, and requests and probes wait for one at most.
 */
const BUILD_SLICE_MS = 10

/** Told which apps a read found, before they are built into a snapshot (tests commit then). */
export type OnRead = (read: {
  complete: boolean
  appKeys: readonly string[]
}) => Promise<void> | void

/** What a reload read, and the snapshot it makes on top of its base. */
export interface ChangedSnapshot {
  readonly found: ChangesFound
  readonly snapshot: Snapshot
}

/**
 * Reads the apps changed since `since` (every app's revision when undefined) and records those
 * whose revision differs from `base`'s, chunk by chunk as they arrive, yielding every 10 ms. A
 * base of another dataset (sql/007_dataset.sql) knows nothing of this database's revisions:
 * every app is read then. A base of another history of the server (a failover that lost commits,
 * db/server-history.ts) has every app listed (`since` is of no use there), and its revisions
 * compared: no write's revision is ever handed out again (sql/008_revision_ids.sql).
 */
export async function readChangedSnapshot(
  sql: Sql,
  read: {
    readonly base: Snapshot | undefined
    readonly since: string | undefined
    /** When the read started: the new snapshot's loadedAt. */
    readonly readAt: Date
    /** Every app made again, even where nothing changed (caught up from the snapshot file). */
    readonly renew: boolean
    readonly onRead?: OnRead | undefined
  },
): Promise<ChangedSnapshot> {
  const { base, since } = read
  const records: AppRecord[] = []
  const held = base === undefined ? new Map<string, AppRecord>() : recordsOf(base)
  // From the first rows built, not from the read's start: the wait for the database blocks nothing,
  // and a reload of one app is then one task, not one that yields to a loaded loop for nothing.
  let sliceStartedAt: number | undefined
  const found = await readSnapshotChanges(sql, {
    ...(since === undefined ? {} : { since, history: base && historyOf(base) }),
    selectApps(found) {
      const sameDataset = base !== undefined && datasetOf(base) === found.dataset
      return found.revisions
        .filter(
          ({ appKey, revision }) =>
            !sameDataset || revision === null || revisionInSnapshot(base, appKey) !== revision,
        )
        .map((app) => app.appKey)
    },
    async onRows(rows) {
      sliceStartedAt ??= performance.now()
      for (const appRows of groupRowsByApp(rows)) {
        records.push(recordApp(appRows, held.get(appRows.app.appKey)))
        // Across chunks too: a chunk read ahead resolves at once, in the same task.
        if (performance.now() - sliceStartedAt < BUILD_SLICE_MS) continue
        await yieldToEventLoop()
        sliceStartedAt = performance.now()
      }
    },
  })
  await read.onRead?.({ complete: found.complete, appKeys: records.map((record) => record.appKey) })
  const snapshot = assembleSnapshot(records, {
    ...(base && { previous: base }),
    removedApps: removedBy(found, base),
    loadedAt: read.readAt,
    dataset: found.dataset,
    history: found.history,
    renew: read.renew,
  })
  return { found, snapshot }
}

/** The base's apps a read says are gone: those deleted since, or a complete read lacks. */
function removedBy(found: ChangesFound, base: Snapshot | undefined): readonly string[] {
  if (!found.complete) return found.removedApps
  const present = new Set(found.revisions.map((app) => app.appKey))
  return (base?.appKeys ?? []).filter((appKey) => !present.has(appKey))
}
