import type {
  AppRow,
  BrandingRow,
  GrantRow,
  LabelRow,
  MenuItemRow,
  SnapshotRows,
} from '../snapshot/types.js'
import type { Sql } from './connect.js'
import type postgres from './postgres-driver.js'
import { selectColumns } from './select-columns.js'
import { textLiteral } from './text-literal.js'
import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
} from './vocabulary.js'

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
      rows: { apps: appRows.map(withoutRevision), branding, menuItems, grants, labels },
      revisions: revisionsOf(appRows),
      unchangedApps: new Set<string>(),
    }
  })
}

/**
 * The apps whose revision is not the one known (added, removed, changed, or
 * without a revision), and the rows of those still there, as JSON arrays from
 * one statement: a single statement sees one snapshot of the database, so no
 * transaction is needed. Only the differences come back, not every app's
 * revision: the database does the comparison, and a reload under load pays
 * for a few rows rather than a thousand. The known revisions are written
 * into the statement (textLiteral), so that it has no parameters and goes
 * out in one flight: a reload under load costs one turn of the event loop
 * less.
 */
async function readChangedApps(sql: Sql, known: AppRevisions): Promise<SnapshotRead> {
  const [result] = await sql<
    {
      /** [app key, its revision now (null: none, or removed), removed] */
      changes: [string, string | null, boolean][]
      apps: AppRow[]
      branding: BrandingRow[]
      menuItems: MenuItemRow[]
      grants: GrantRow[]
      labels: LabelRow[]
    }[]
  >`
    with known as (
      select key as app_key, value::bigint as revision
      from jsonb_each_text(${textLiteral(sql, JSON.stringify(Object.fromEntries(known)))}::jsonb)
    ), current_revisions as (
      select a.app_key, r.revision::text as revision
      from shell.apps a left join shell.app_revisions r using (app_key)
    ), changes as (
      select app_key, c.revision, c.app_key is null as removed
      from current_revisions c full join known k using (app_key)
      where c.app_key is null or c.revision is null or k.revision::text is distinct from c.revision
    ), changed as (
      -- Used as = any(array(…)): a small array computed first, then index look-ups (by
      -- app_key, by item id), rather than joins the planner would make scan whole tables.
      select app_key from changes where not removed
    ), changed_items as (
      select id from shell.menu_items where app_key = any(array(select app_key from changed))
    )
    select
      (select coalesce(json_agg(json_build_array(app_key, revision, removed)), '[]') from changes)
        as changes,
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
  const revisions = new Map(known)
  const changedApps = new Set<string>()
  for (const [appKey, revision, removed] of result.changes) {
    changedApps.add(appKey)
    // Removed, or written around the triggers (no revision: always read whole).
    if (removed || revision === null) revisions.delete(appKey)
    else revisions.set(appKey, revision)
  }
  const unchangedApps = new Set<string>()
  for (const appKey of known.keys()) if (!changedApps.has(appKey)) unchangedApps.add(appKey)
  return { rows: { apps, branding, menuItems, grants, labels }, revisions, unchangedApps }
}

/** Each app's revision; an app without one (written around the triggers) is always read whole. */
function revisionsOf(apps: readonly AppRowWithRevision[]): Map<string, string> {
  const revisions = new Map<string, string>()
  for (const { appKey, revision } of apps) if (revision !== null) revisions.set(appKey, revision)
  return revisions
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
