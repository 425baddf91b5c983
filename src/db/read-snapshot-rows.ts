import type postgres from 'postgres'
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
import { selectColumns } from './select-columns.js'

/** Each app's revision (sql/002_app_revisions.sql), as a decimal string. */
export type AppRevisions = ReadonlyMap<string, string>

export interface SnapshotRead {
  /** Every app row; the other tables' rows of the changed apps only. */
  readonly rows: SnapshotRows
  readonly revisions: AppRevisions
  /** Apps whose revision equals the one known before: their other rows were not read. */
  readonly unchangedApps: ReadonlySet<string>
}

/**
 * Reads the database in one read-only REPEATABLE READ transaction, so the
 * rows are one consistent state: never a partial snapshot, even while an
 * import commits in the middle of the read. Given the revisions of the
 * snapshot in service, only the apps whose revision moved are read whole;
 * without them (the first load, after a reconnect) everything is.
 */
export async function readSnapshotRows(sql: Sql, known?: AppRevisions): Promise<SnapshotRead> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const appRows = await tx<(AppRow & { revision: string | null })[]>`
      select ${selectColumns(tx, APP_COLUMNS, 'a')}, r.revision::text as revision
      from shell.apps a left join shell.app_revisions r using (app_key)`
    const revisions = new Map<string, string>()
    const unchangedApps = new Set<string>()
    const changedApps: string[] = []
    const apps: AppRow[] = []
    for (const { revision, ...app } of appRows) {
      apps.push(app)
      if (revision === null) {
        // No revision row (written around the triggers): always read it whole.
        changedApps.push(app.appKey)
        continue
      }
      revisions.set(app.appKey, revision)
      if (known?.get(app.appKey) === revision) unchangedApps.add(app.appKey)
      else changedApps.push(app.appKey)
    }
    const [branding, menuItems, grants, labels] =
      unchangedApps.size === 0 ? await readAllAppRows(tx) : await readAppRowsOf(tx, changedApps)
    return { rows: { apps, branding, menuItems, grants, labels }, revisions, unchangedApps }
  })
}

type AppRowSets = [BrandingRow[], MenuItemRow[], GrantRow[], LabelRow[]]

// Two plain queries rather than one with an "all or these" condition: each
// keeps a plan of its own (a full scan, or the app_key indexes).
// Pipelined on the transaction's one connection: three round trips cost about one.

async function readAllAppRows(tx: postgres.TransactionSql): Promise<AppRowSets> {
  return Promise.all([
    tx<BrandingRow[]>`select ${selectColumns(tx, BRANDING_COLUMNS)} from shell.branding`,
    tx<MenuItemRow[]>`select ${selectColumns(tx, MENU_ITEM_COLUMNS)} from shell.menu_items`,
    tx<GrantRow[]>`select ${selectColumns(tx, GRANT_COLUMNS)} from shell.menu_role_grants`,
    tx<LabelRow[]>`select ${selectColumns(tx, LABEL_COLUMNS)} from shell.menu_item_labels`,
  ])
}

async function readAppRowsOf(
  tx: postgres.TransactionSql,
  appKeys: readonly string[],
): Promise<AppRowSets> {
  const keys = [...appKeys]
  return Promise.all([
    tx<BrandingRow[]>`
      select ${selectColumns(tx, BRANDING_COLUMNS)} from shell.branding
      where app_key = any(${keys})`,
    tx<MenuItemRow[]>`
      select ${selectColumns(tx, MENU_ITEM_COLUMNS)} from shell.menu_items
      where app_key = any(${keys})`,
    tx<GrantRow[]>`
      select ${selectColumns(tx, GRANT_COLUMNS, 'g')}
      from shell.menu_role_grants g join shell.menu_items m on m.id = g.menu_item_id
      where m.app_key = any(${keys})`,
    tx<LabelRow[]>`
      select ${selectColumns(tx, LABEL_COLUMNS, 'l')}
      from shell.menu_item_labels l join shell.menu_items m on m.id = l.menu_item_id
      where m.app_key = any(${keys})`,
  ])
}
