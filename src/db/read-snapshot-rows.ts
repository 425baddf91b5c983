import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
} from '../domain/vocabulary.js'
import type { Sql } from './connect.js'
import type postgres from './postgres-driver.js'
import {
  keepApps,
  type MovedApp,
  type ReadMark,
  readFewChangedApps,
} from './read-few-changed-apps.js'
import { selectColumns } from './select-columns.js'
import { selectHistory } from './server-history.js'
import type {
  AppRow,
  BrandingRow,
  GrantRow,
  LabelRow,
  MenuItemRow,
  SnapshotRows,
} from './snapshot-rows.js'

/** One app found by a read, at the revision it was read at (null: written around the triggers). */
export interface AppRevision {
  readonly appKey: string
  readonly revision: string | null
}

/** What a read found, before any row of an app is read, and where the next read starts. */
export interface ChangesFound {
  /** True: `revisions` lists every app, and an app it lacks is gone. Else the apps changed since. */
  readonly complete: boolean
  readonly revisions: readonly AppRevision[]
  /** Apps deleted since the last read (on an incremental read; a complete one lacks them). */
  readonly removedApps: readonly string[]
  /** Changes since this read are by transactions at or above this id (xid8, as text): see sql/005_change_xids.sql. */
  readonly watermark: string
  /** Read from a hot standby (pg_is_in_recovery()): a notified commit may not be replayed yet. */
  readonly fromStandby: boolean
  /** Names the database's data (sql/007_dataset.sql): revisions of another dataset say nothing here. */
  readonly dataset: string
  /** The server's history (server-history.ts): a watermark of another says nothing here. */
  readonly history: string
}

/*
 * The watermark on a hot standby: pg_current_xact_id() cannot run there (SQLSTATE 25006; only
 * the primary's triggers call it), but pg_current_snapshot() can, and its xmin is the oldest
 * transaction the replayed WAL shows running: a standby counts every id below the highest it has
 * seen as running until it replays its commit or abort. So the rule of sql/005_change_xids.sql
 * holds there too, the xmin trailing by the replay lag (test/db/standby-watermark.test.ts).
 */

export interface ReadChangesOptions {
  /** An earlier read's watermark: the apps changed since; undefined: every app. */
  readonly since?: string
  /** The history `since` is of: on a server of another (a failover), every app is listed. */
  readonly history?: string
  /**
   * Of the apps found, those whose rows to read (the others are known at their revision), in the
   * order found: the database's order of app keys.
   */
  selectApps(found: ChangesFound): readonly string[]
  /** The rows of each chunk of the selected apps, in turn; the next chunk is read meanwhile. */
  onRows(rows: SnapshotRows): Promise<void> | void
}

/**
 * Apps per chunk: a read of thousands of apps never holds all their rows at once (a chunk of
 * apps of 40 items is some 4,000 items and 8,000 labels), and the next chunk is read while one
 * is built.
 */
const APPS_PER_CHUNK = 100
/** Chunks in flight while one is built: the database and the build overlap. */
const CHUNKS_AHEAD = 2

/**
 * Reads what changed in one read-only REPEATABLE READ transaction, one state of the database
 * even while an import commits: which apps there are (or which changed since `since`) at which
 * revisions, then the rows of the apps `selectApps` picks, chunk by chunk. A read costs what
 * changed: a complete read of an unchanged database reads one small row per app.
 */
export async function readSnapshotChanges(
  sql: Sql,
  options: ReadChangesOptions,
): Promise<ChangesFound> {
  const { since, history } = options
  const few = since === undefined ? undefined : await readFewChangedApps(sql, since)
  // A watermark of another history says nothing of this server's changes: every app is listed.
  if (few !== undefined && (history === undefined || few.mark.history === history)) {
    const found = changesFound(few.mark, few.moved, false)
    const selected = options.selectApps(found)
    if (selected.length > 0) await options.onRows(keepApps(few.rows, new Set(selected)))
    return found
  }
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const found = await readChangesFound(tx, since, history)
    await readInChunks(tx, options.selectApps(found), options.onRows)
    return found
  })
}

/**
 * Where the read stands, then which apps there are (or moved since `since`): every app when the
 * server's history is not the one `since` is of (a failover), as its watermark says nothing here.
 */
async function readChangesFound(
  tx: postgres.TransactionSql,
  since: string | undefined,
  history: string | undefined,
): Promise<ChangesFound> {
  const [mark] = await tx<ReadMark[]>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
      pg_is_in_recovery() as "fromStandby", ${selectHistory(tx)},
      (select id::text from shell.dataset) as dataset`
  if (mark === undefined) throw new Error('the read returned no watermark')
  const after = history === undefined || history === mark.history ? since : undefined
  const moved = await tx<MovedApp[]>`${
    after === undefined
      ? tx`
          select a.app_key as "appKey", r.revision_id::text as revision, false as removed
          from shell.apps a left join shell.app_revisions r using (app_key)`
      : tx`
          select r.app_key as "appKey", r.revision_id::text as revision, a.app_key is null as removed
          from shell.app_revisions r left join shell.apps a using (app_key)
          where r.changed_xid >= ${after}::xid8`
  } order by 1`
  return changesFound(mark, moved, after === undefined)
}

function changesFound(mark: ReadMark, moved: readonly MovedApp[], complete: boolean): ChangesFound {
  const { watermark, fromStandby, dataset, history } = mark
  return {
    complete,
    revisions: moved
      .filter((app) => !app.removed)
      .map(({ appKey, revision }) => ({ appKey, revision })),
    removedApps: moved.filter((app) => app.removed).map((app) => app.appKey),
    watermark,
    fromStandby,
    dataset,
    history,
  }
}

/** Reads the rows of `selected` chunk by chunk, the next chunks read while one is built. */
async function readInChunks(
  tx: postgres.TransactionSql,
  selected: readonly string[],
  onRows: ReadChangesOptions['onRows'],
): Promise<void> {
  // In the database's order of app keys (its collation), as readAppRows' key ranges are.
  const chunks: string[][] = []
  for (let start = 0; start < selected.length; start += APPS_PER_CHUNK) {
    chunks.push(selected.slice(start, start + APPS_PER_CHUNK))
  }
  // Chunks are asked for ahead of the one being built, so the database works meanwhile.
  const inFlight: Promise<SnapshotRows>[] = []
  let asked = 0
  const askNext = () => {
    const chunk = chunks[asked]
    if (chunk === undefined) return
    asked += 1
    const rows = readAppRows(tx, chunk)
    // Failed in onRows, the transaction rolls back and fails the reads in flight: not unhandled.
    rows.catch(() => {})
    inFlight.push(rows)
  }
  while (asked < Math.min(CHUNKS_AHEAD, chunks.length)) askNext()
  for (let rows = inFlight.shift(); rows !== undefined; rows = inFlight.shift()) {
    const read = await rows
    askNext()
    await onRows(read)
  }
}

/**
 * The rows of the given apps (in the database's order of their keys), as rows: the driver parses them as they arrive, so a
 * chunk never holds the event loop. The key range lets the database walk the apps' index
 * instead of scanning whole tables for each chunk.
 */
async function readAppRows(
  tx: postgres.TransactionSql,
  appKeys: readonly string[],
): Promise<SnapshotRows> {
  const first = appKeys[0] ?? ''
  const last = appKeys[appKeys.length - 1] ?? ''
  const keys = tx.array([...appKeys])
  const chosen = (alias: string) =>
    tx`${tx(`${alias}.app_key`)} between ${first} and ${last} and ${tx(`${alias}.app_key`)} = any(${keys}::text[])`
  const [apps, branding, menuItems, grants, labels] = await Promise.all([
    tx<AppRow[]>`
      select ${selectColumns(tx, APP_COLUMNS, 'a')}, r.revision_id::text as revision
      from shell.apps a left join shell.app_revisions r using (app_key)
      where ${chosen('a')}`,
    tx<BrandingRow[]>`
      select ${selectColumns(tx, BRANDING_COLUMNS, 'b')} from shell.branding b where ${chosen('b')}`,
    tx<MenuItemRow[]>`
      select ${selectColumns(tx, MENU_ITEM_COLUMNS, 'm')} from shell.menu_items m where ${chosen('m')}`,
    tx<GrantRow[]>`
      select ${selectColumns(tx, GRANT_COLUMNS, 'g')}
      from shell.menu_role_grants g join shell.menu_items m on m.id = g.menu_item_id
      where ${chosen('m')}`,
    tx<LabelRow[]>`
      select ${selectColumns(tx, LABEL_COLUMNS, 'l')}
      from shell.menu_item_labels l join shell.menu_items m on m.id = l.menu_item_id
      where ${chosen('m')}`,
  ])
  return { apps, branding, menuItems, grants, labels }
}

/** Each app changed since `watermark`, with its revision (null: deleted), and the new watermark. */
export interface RevisionCheck {
  readonly revisions: ReadonlyMap<string, string | null>
  readonly watermark: string
  readonly fromStandby: boolean
  /** Null when the query returned no row. */
  readonly history: string | null
}

/** What a read since `watermark` would find, without its rows: one small row per changed app. */
export async function readRevisionsChangedSince(
  sql: Sql,
  watermark: string,
): Promise<RevisionCheck> {
  const rows = await sql<
    (Omit<ReadMark, 'dataset'> & { appKey: string | null; revision: string | null })[]
  >`
    select pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
      pg_is_in_recovery() as "fromStandby", ${selectHistory(sql)}, moved.*
    from (select 1) as one left join (
      select r.app_key as "appKey", case when a.app_key is null then null else r.revision_id::text end as revision
      from shell.app_revisions r left join shell.apps a using (app_key)
      where r.changed_xid >= ${watermark}::xid8
    ) as moved on true`
  const revisions = new Map<string, string | null>()
  for (const row of rows) if (row.appKey !== null) revisions.set(row.appKey, row.revision)
  const [first] = rows
  return {
    revisions,
    watermark: first?.watermark ?? watermark,
    fromStandby: first?.fromStandby ?? false,
    history: first?.history ?? null,
  }
}
