import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
  type MenuKind,
  type Zone,
} from '../domain/vocabulary.js'
import type { Sql } from './connect.js'
import { selectColumns } from './select-columns.js'

/** One row of `shell.apps`, with its revision (sql/002_app_revisions.sql). */
export interface AppRow {
  readonly appKey: string
  readonly name: string
  readonly description: string | null
  readonly homeUrl: string | null
  /** The language of `menu_items.label`; a language tag. */
  readonly defaultLocale: string
  /** Moves with every committed change of the app; null for an app written around the triggers. */
  readonly revision: string | null
}

/** One row of `shell.branding`. */
export interface BrandingRow {
  readonly appKey: string
  readonly productName: string | null
  readonly logoUrl: string | null
  readonly faviconUrl: string | null
  readonly primaryColor: string | null
  readonly accentColor: string | null
  readonly footerText: string | null
  /** Parsed jsonb; any JSON value the database holds. */
  readonly theme: unknown
}

/** One row of `shell.menu_items`. Ids are bigint in the database, carried as decimal strings. */
export interface MenuItemRow {
  readonly id: string
  readonly appKey: string
  readonly itemKey: string
  readonly zone: Zone
  readonly parentId: string | null
  readonly position: number
  readonly kind: MenuKind
  readonly label: string
  readonly icon: string | null
  readonly href: string | null
  readonly external: boolean
  /** The share of callers who see it (0 to 100); null: every caller its roles admit. */
  readonly rolloutPercent: number | null
  /** Its window, in milliseconds since the epoch: shown when from <= now < until; null: unbounded. */
  readonly visibleFrom: number | null
  readonly visibleUntil: number | null
}

/** One row of `shell.menu_role_grants`. */
export interface GrantRow {
  readonly menuItemId: string
  readonly role: string
}

/** One row of `shell.menu_item_labels`. */
export interface LabelRow {
  readonly menuItemId: string
  readonly locale: string
  readonly label: string
}

/** The rows of some apps (or all), as one consistent state of the database. */
export interface SnapshotRows {
  readonly apps: readonly AppRow[]
  readonly branding: readonly BrandingRow[]
  readonly menuItems: readonly MenuItemRow[]
  readonly grants: readonly GrantRow[]
  readonly labels: readonly LabelRow[]
}

/** One read of the database, and where the next one starts. */
export interface SnapshotRead {
  readonly rows: SnapshotRows
  /** True when `rows` hold every app: an app they lack is gone. Else they hold the apps changed since the last read. */
  readonly complete: boolean
  /** Apps deleted since the last read (on an incremental read; a complete one lacks them). */
  readonly removedApps: readonly string[]
  /** Changes since this read are by transactions at or above this id (xid8, as text): see sql/005_change_xids.sql. */
  readonly watermark: string
  /** Read from a hot standby (pg_is_in_recovery()): a notified commit may not be replayed yet. */
  readonly fromStandby: boolean
}

/** Where a read stands, as each read's first columns give it. */
type ReadMark = Pick<SnapshotRead, 'watermark' | 'fromStandby'>

/*
 * The watermark on a hot standby: pg_current_xact_id() cannot run there (SQLSTATE 25006; only
 * the primary's triggers call it), but pg_current_snapshot() can, and its xmin is the oldest
 * transaction the replayed WAL shows running: a standby counts every id below the highest it has
 * seen as running until it replays its commit or abort. So the rule of sql/005_change_xids.sql
 * holds there too, the xmin trailing by the replay lag (test/db/standby-watermark.test.ts).
 */

/**
 * Everything, in one read-only REPEATABLE READ transaction: one state of the database even while
 * an import commits. Its statements are pipelined on the transaction's connection.
 */
export async function readAllRows(sql: Sql): Promise<SnapshotRead> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const [[mark], apps, branding, menuItems, grants, labels] = await Promise.all([
      tx<ReadMark[]>`
        select pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
          pg_is_in_recovery() as "fromStandby"`,
      tx<AppRow[]>`
        select ${selectColumns(tx, APP_COLUMNS, 'a')}, r.revision::text as revision
        from shell.apps a left join shell.app_revisions r using (app_key)`,
      tx<BrandingRow[]>`select ${selectColumns(tx, BRANDING_COLUMNS)} from shell.branding`,
      tx<MenuItemRow[]>`select ${selectColumns(tx, MENU_ITEM_COLUMNS)} from shell.menu_items`,
      tx<GrantRow[]>`select ${selectColumns(tx, GRANT_COLUMNS)} from shell.menu_role_grants`,
      tx<LabelRow[]>`select ${selectColumns(tx, LABEL_COLUMNS)} from shell.menu_item_labels`,
    ])
    if (mark === undefined) throw new Error('the read returned no watermark')
    const rows = { apps, branding, menuItems, grants, labels }
    const { watermark, fromStandby } = mark
    return { rows, complete: true, removedApps: [], watermark, fromStandby }
  })
}

/**
 * The apps changed since `watermark` (an earlier read's), whole, in one statement (one state of
 * the database, no transaction); the database picks the apps, so the read costs what the change
 * costs. An app changed by a transaction running at the earlier read may come again, unchanged.
 */
export async function readRowsChangedSince(sql: Sql, watermark: string): Promise<SnapshotRead> {
  const [result] = await sql<(SnapshotRows & ReadMark & Pick<SnapshotRead, 'removedApps'>)[]>`
    with moved as (
      select r.app_key, a.app_key is null as removed
      from shell.app_revisions r left join shell.apps a using (app_key)
      where r.changed_xid >= ${watermark}::xid8
    ), changed_items as (
      -- = any(array(…)): a small array first, then index look-ups, not scans of whole tables.
      select id from shell.menu_items
      where app_key = any(array(select app_key from moved where not removed))
    )
    select
      pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
      pg_is_in_recovery() as "fromStandby",
      (select coalesce(json_agg(app_key), '[]') from moved where removed) as "removedApps",
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, APP_COLUMNS, 'a')}, r.revision::text as revision
        from shell.apps a join shell.app_revisions r using (app_key)
        where a.app_key = any(array(select app_key from moved where not removed))) t) as apps,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, BRANDING_COLUMNS)} from shell.branding
        where app_key = any(array(select app_key from moved where not removed))) t) as branding,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, MENU_ITEM_COLUMNS)} from shell.menu_items
        where id = any(array(select id from changed_items))) t) as "menuItems",
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, GRANT_COLUMNS)} from shell.menu_role_grants
        where menu_item_id = any(array(select id from changed_items))) t) as grants,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, LABEL_COLUMNS)} from shell.menu_item_labels
        where menu_item_id = any(array(select id from changed_items))) t) as labels`
  if (result === undefined) throw new Error('the read returned no row')
  const { apps, branding, menuItems, grants, labels, removedApps, fromStandby } = result
  const rows = { apps, branding, menuItems, grants, labels }
  return { rows, complete: false, removedApps, watermark: result.watermark, fromStandby }
}

/** Each app changed since `watermark`, with its revision (null: deleted), and the new watermark. */
export interface RevisionCheck {
  readonly revisions: ReadonlyMap<string, string | null>
  readonly watermark: string
  readonly fromStandby: boolean
}

/** What a read since `watermark` would find, without its rows: one small row per changed app. */
export async function readRevisionsChangedSince(
  sql: Sql,
  watermark: string,
): Promise<RevisionCheck> {
  const rows = await sql<(ReadMark & { appKey: string | null; revision: string | null })[]>`
    select pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
      pg_is_in_recovery() as "fromStandby", moved.*
    from (select 1) as one left join (
      select r.app_key as "appKey", case when a.app_key is null then null else r.revision::text end as revision
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
  }
}
