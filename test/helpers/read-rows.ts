/**
 * Reads in one piece, for tests and the benchmark: the service reads by chunk
 * (src/db/read-snapshot-rows.ts, readSnapshotChanges) and builds as it reads.
 */
import type { Sql } from '../../src/db/connect.js'
import { type ChangesFound, readSnapshotChanges } from '../../src/db/read-snapshot-rows.js'
import type { SnapshotRows } from '../../src/db/snapshot-rows.js'

/** Every row a read finds, in one piece. */
export interface SnapshotRead extends ChangesFound {
  readonly rows: SnapshotRows
}

/** Every app, all its rows. */
export function readAllRows(sql: Sql): Promise<SnapshotRead> {
  return readAndCollect(sql, undefined)
}

/** The apps changed since `watermark` (an earlier read's), all their rows. */
export function readRowsChangedSince(sql: Sql, watermark: string): Promise<SnapshotRead> {
  return readAndCollect(sql, watermark)
}

async function readAndCollect(sql: Sql, since: string | undefined): Promise<SnapshotRead> {
  const chunks: SnapshotRows[] = []
  const found = await readSnapshotChanges(sql, {
    ...(since === undefined ? {} : { since }),
    selectApps: ({ revisions }) => revisions.map((app) => app.appKey),
    onRows: (rows) => {
      chunks.push(rows)
    },
  })
  const rows: SnapshotRows = {
    apps: chunks.flatMap((chunk) => chunk.apps),
    branding: chunks.flatMap((chunk) => chunk.branding),
    menuItems: chunks.flatMap((chunk) => chunk.menuItems),
    grants: chunks.flatMap((chunk) => chunk.grants),
    labels: chunks.flatMap((chunk) => chunk.labels),
  }
  return { ...found, rows }
}
