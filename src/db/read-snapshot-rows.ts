import type {
  AppRow,
  BrandingRow,
  GrantRow,
  LabelRow,
  MenuItemRow,
  SnapshotRows,
} from '../snapshot/types.js'
import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
} from '../vocabulary.js'
import type { Sql } from './connect.js'
import type postgres from './postgres-driver.js'
import { selectColumns } from './select-columns.js'

/** Each app's revision (sql/002_app_revisions.sql), as a decimal string. */
export type AppRevisions = ReadonlyMap<string, string>

export interface SnapshotRead {
  /** The rows of the apps read: every app on a full read, else the moved ones only. */
  readonly rows: SnapshotRows
  readonly revisions: AppRevisions
  /** Apps whose revision equals the one known before: none of their rows were read. */
  readonly unchangedApps: ReadonlySet<string>
}

/**
 * Reads one consistent state of the database: never a partial snapshot, even
 * while an import commits in the middle of the read. Given the revisions of
 * the snapshot in service, only the apps whose revision moved are read whole,
 * in a single statement (one round trip: a reload under load waits for the
 * event loop once per round trip); without them (the first load, after a
 * reconnect) everything is, in one read-only REPEATABLE READ transaction.
 */
export async function readSnapshotRows(sql: Sql, known?: AppRevisions): Promise<SnapshotRead> {
  return known === undefined ? readEverything(sql) : readChangedApps(sql, known)
}

type AppRowWithRevision = AppRow & { revision: string | null }

async function readEverything(sql: Sql): Promise<SnapshotRead> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const appRows = await tx<AppRowWithRevision[]>`
      select ${selectColumns(tx, APP_COLUMNS, 'a')}, r.revision::text as revision
      from shell.apps a left join shell.app_revisions r using (app_key)`
    const [branding, menuItems, grants, labels] = await readAllAppRows(tx)
    return {
      ...sortByRevision(appRows),
      rows: { apps: appRows.map(withoutRevision), branding, menuItems, grants, labels },
    }
  })
}

/**
 * Every app row with its revision, and the other rows of the apps whose
 * revision is not the one known, as JSON arrays from one statement: a single
 * statement sees one snapshot of the database, so no transaction is needed.
 */
async function readChangedApps(sql: Sql, known: AppRevisions): Promise<SnapshotRead> {
  const [result] = await sql<
    {
      revisions: Record<string, string | null>
      apps: AppRow[]
      branding: BrandingRow[]
      menuItems: MenuItemRow[]
      grants: GrantRow[]
      labels: LabelRow[]
    }[]
  >`
    with known as (
      select * from unnest(${[...known.keys()]}::text[], ${[...known.values()]}::bigint[])
        as k(app_key, revision)
    ), current_revisions as (
      select a.app_key, r.revision::text as revision
      from shell.apps a left join shell.app_revisions r using (app_key)
    ), changed as (
      -- Used as = any(array(…)): a small array computed first, then index look-ups (by
      -- app_key, by item id), rather than joins the planner would make scan whole tables.
      select c.app_key from current_revisions c left join known k using (app_key)
      where c.revision is null or k.revision::text is distinct from c.revision
    ), changed_items as (
      select id from shell.menu_items where app_key = any(array(select app_key from changed))
    )
    select
      (select coalesce(json_object_agg(app_key, revision), '{}') from current_revisions)
        as revisions,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, APP_COLUMNS, 'a')} from shell.apps a
        where a.app_key = any(array(select app_key from changed))) t) as apps,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, BRANDING_COLUMNS, 'b')} from shell.branding b
        where b.app_key = any(array(select app_key from changed))) t) as branding,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, MENU_ITEM_COLUMNS, 'm')} from shell.menu_items m
        where m.app_key = any(array(select app_key from changed))) t) as "menuItems",
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, GRANT_COLUMNS, 'g')}
        from shell.menu_role_grants g
        where g.menu_item_id = any(array(select id from changed_items))) t) as grants,
      (select coalesce(json_agg(t), '[]') from (
        select ${selectColumns(sql, LABEL_COLUMNS, 'l')}
        from shell.menu_item_labels l
        where l.menu_item_id = any(array(select id from changed_items))) t) as labels`
  if (result === undefined) throw new Error('the reload statement returned no row')
  const { apps, branding, menuItems, grants, labels } = result
  const { revisions, unchangedApps } = sortByRevision(
    Object.entries(result.revisions).map(([appKey, revision]) => ({ appKey, revision })),
    known,
  )
  return { rows: { apps, branding, menuItems, grants, labels }, revisions, unchangedApps }
}

/** Each app's revision, and which apps kept the one known (none without `known`). */
function sortByRevision(
  apps: readonly { appKey: string; revision: string | null }[],
  known?: AppRevisions,
): { revisions: Map<string, string>; unchangedApps: Set<string> } {
  const revisions = new Map<string, string>()
  const unchangedApps = new Set<string>()
  for (const { appKey, revision } of apps) {
    // No revision row (written around the triggers): always read whole.
    if (revision === null) continue
    revisions.set(appKey, revision)
    if (known?.get(appKey) === revision) unchangedApps.add(appKey)
  }
  return { revisions, unchangedApps }
}

function withoutRevision({ revision: _revision, ...app }: AppRowWithRevision): AppRow {
  return app
}

type AppRowSets = [BrandingRow[], MenuItemRow[], GrantRow[], LabelRow[]]

// Pipelined on the transaction's one connection: the reads cost about one round trip.

async function readAllAppRows(tx: postgres.TransactionSql): Promise<AppRowSets> {
  return Promise.all([
    tx<BrandingRow[]>`select ${selectColumns(tx, BRANDING_COLUMNS)} from shell.branding`,
    tx<MenuItemRow[]>`select ${selectColumns(tx, MENU_ITEM_COLUMNS)} from shell.menu_items`,
    tx<GrantRow[]>`select ${selectColumns(tx, GRANT_COLUMNS)} from shell.menu_role_grants`,
    tx<LabelRow[]>`select ${selectColumns(tx, LABEL_COLUMNS)} from shell.menu_item_labels`,
  ])
}
