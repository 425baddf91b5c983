import type { AppRow, BrandingRow, GrantRow, MenuItemRow, SnapshotRows } from '../snapshot/types.js'
import type { Sql } from './connect.js'

/**
 * Reads all four tables in one read-only REPEATABLE READ transaction, so the
 * rows are one consistent state of the database: never a partial snapshot,
 * even while an import commits in the middle of the read.
 */
export async function readSnapshotRows(sql: Sql): Promise<SnapshotRows> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    // Pipelined on the transaction's one connection: four round trips cost about one.
    const [apps, branding, menuItems, grants] = await Promise.all([
      tx<AppRow[]>`
        select app_key as "appKey", name, description, home_url as "homeUrl"
        from shell.apps`,
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
    return { apps, branding, menuItems, grants }
  })
}
