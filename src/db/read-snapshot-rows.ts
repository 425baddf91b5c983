import type { AppRow, BrandingRow, GrantRow, MenuItemRow, SnapshotRows } from '../snapshot/types.js'
import type { Sql } from './connect.js'
import type postgres from './postgres-driver.js'

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
      select a.app_key as "appKey", a.name, a.description, a.home_url as "homeUrl",
             r.revision::text as revision
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
    const [branding, menuItems, grants] =
      unchangedApps.size === 0 ? await readAllAppRows(tx) : await readAppRowsOf(tx, changedApps)
    return { rows: { apps, branding, menuItems, grants }, revisions, unchangedApps }
  })
}

type AppRowSets = [BrandingRow[], MenuItemRow[], GrantRow[]]

// Two plain queries rather than one with an "all or these" condition: each
// keeps a plan of its own (a full scan, or the app_key indexes).
// Pipelined on the transaction's one connection: three round trips cost about one.

async function readAllAppRows(tx: postgres.TransactionSql): Promise<AppRowSets> {
  return Promise.all([
    tx<BrandingRow[]>`
      select app_key as "appKey", product_name as "productName", logo_url as "logoUrl",
             favicon_url as "faviconUrl", primary_color as "primaryColor",
             accent_color as "accentColor", footer_text as "footerText", theme
      from shell.branding`,
    tx<MenuItemRow[]>`
      select id::text as id, app_key as "appKey", item_key as "itemKey", zone,
             parent_id::text as "parentId", position, kind, label, icon, href, external
      from shell.menu_items`,
    tx<GrantRow[]>`
      select menu_item_id::text as "menuItemId", role
      from shell.menu_role_grants`,
  ])
}

async function readAppRowsOf(
  tx: postgres.TransactionSql,
  appKeys: readonly string[],
): Promise<AppRowSets> {
  const keys = [...appKeys]
  return Promise.all([
    tx<BrandingRow[]>`
      select app_key as "appKey", product_name as "productName", logo_url as "logoUrl",
             favicon_url as "faviconUrl", primary_color as "primaryColor",
             accent_color as "accentColor", footer_text as "footerText", theme
      from shell.branding where app_key = any(${keys})`,
    tx<MenuItemRow[]>`
      select id::text as id, app_key as "appKey", item_key as "itemKey", zone,
             parent_id::text as "parentId", position, kind, label, icon, href, external
      from shell.menu_items where app_key = any(${keys})`,
    tx<GrantRow[]>`
      select g.menu_item_id::text as "menuItemId", g.role
      from shell.menu_role_grants g join shell.menu_items m on m.id = g.menu_item_id
      where m.app_key = any(${keys})`,
  ])
}
