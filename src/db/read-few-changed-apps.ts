import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
} from '../domain/vocabulary.js'
import type { Sql } from './connect.js'
import { selectColumns } from './select-columns.js'
import { selectHistory } from './server-history.js'
import type { SnapshotRows } from './snapshot-rows.js'

/** Where a read stands, as its first columns give it (read-snapshot-rows.ts, ChangesFound). */
export interface ReadMark {
  readonly watermark: string
  readonly fromStandby: boolean
  readonly dataset: string
  /** The server's history (server-history.ts). */
  readonly history: string
}

/** An app a read found, present or deleted since. */
export interface MovedApp {
  readonly appKey: string
  readonly revision: string | null
  readonly removed: boolean
}

/**
 * At most this many apps changed since the last read are read in one statement, their rows as
 * JSON: some 20 KB each, parsed in one piece (a few milliseconds for all of them). A commit
 * mostly changes one app (an import of one definition file); more are read by chunk.
 */
export const FEW_APPS = 10

/**
 * The apps changed since `since`, when they are few, in one statement: one state of the database
 * with no transaction, in one round trip, as a loaded event loop gives one a turn. Undefined when
 * more changed: they are read by chunk.
 */
export async function readFewChangedApps(
  sql: Sql,
  since: string,
): Promise<{ mark: ReadMark; moved: readonly MovedApp[]; rows: SnapshotRows } | undefined> {
  type FewRead = ReadMark & SnapshotRows & { few: boolean; moved: MovedApp[] }
  const [read] = await sql<FewRead[]>`
    with moved as (
      select r.app_key, r.revision_id::text as revision, a.app_key is null as removed
      from shell.app_revisions r left join shell.apps a using (app_key)
      where r.changed_xid >= ${since}::xid8
    ), few as (
      select app_key from moved where not removed and (select count(*) from moved) <= ${FEW_APPS}
    ), few_items as (
      -- = any(array(…)): a small array first, then index look-ups, not scans of whole tables.
      select id from shell.menu_items where app_key = any(array(select app_key from few))
    )
    select pg_snapshot_xmin(pg_current_snapshot())::text as watermark,
      pg_is_in_recovery() as "fromStandby", ${selectHistory(sql)},
      (select id::text from shell.dataset) as dataset,
      (select count(*) from moved) <= ${FEW_APPS} as few,
      (select coalesce(json_agg(t order by t."appKey"), '[]') from (
        select app_key as "appKey", revision, removed from moved
        where (select count(*) from moved) <= ${FEW_APPS}) t) as moved,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, APP_COLUMNS, 'a')}, r.revision_id::text as revision
        from shell.apps a left join shell.app_revisions r using (app_key)
        where a.app_key = any(array(select app_key from few))) t) as apps,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, BRANDING_COLUMNS, 'b')} from shell.branding b
        where b.app_key = any(array(select app_key from few))) t) as branding,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, MENU_ITEM_COLUMNS, 'm')} from shell.menu_items m
        where m.id = any(array(select id from few_items))) t) as "menuItems",
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, GRANT_COLUMNS, 'g')} from shell.menu_role_grants g
        where g.menu_item_id = any(array(select id from few_items))) t) as grants,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, LABEL_COLUMNS, 'l')} from shell.menu_item_labels l
        where l.menu_item_id = any(array(select id from few_items))) t) as labels`
  if (read === undefined) throw new Error('the read returned no watermark')
  if (!read.few) return undefined
  const { watermark, fromStandby, history, dataset, moved, apps } = read
  const { branding, menuItems, grants, labels } = read
  return {
    mark: { watermark, fromStandby, history, dataset },
    moved,
    rows: { apps, branding, menuItems, grants, labels },
  }
}

/** The rows of the apps in `appKeys` only. */
export function keepApps(rows: SnapshotRows, appKeys: ReadonlySet<string>): SnapshotRows {
  const menuItems = rows.menuItems.filter((item) => appKeys.has(item.appKey))
  const itemIds = new Set(menuItems.map((item) => item.id))
  return {
    apps: rows.apps.filter((app) => appKeys.has(app.appKey)),
    branding: rows.branding.filter((branding) => appKeys.has(branding.appKey)),
    menuItems,
    grants: rows.grants.filter((grant) => itemIds.has(grant.menuItemId)),
    labels: rows.labels.filter((label) => itemIds.has(label.menuItemId)),
  }
}
