import { isDeepStrictEqual } from 'node:util'
import type { AppDefinition, BrandingDefinition, ItemDefinition } from '../definitions/types.js'
import { type MenuKind, ZONES, type Zone } from '../snapshot/types.js'
import type { Sql } from './connect.js'
import type postgres from './postgres-driver.js'

type Queryable = postgres.TransactionSql

interface ItemRow {
  id: string
  app_key: string
  item_key: string
  zone: Zone
  parent_id: string | null
  kind: MenuKind
  label: string
  icon: string | null
  href: string | null
  external: boolean
  roles: string[]
}

/** Reads app definitions (all apps, or one) in the import format, sorted by key. */
export async function readAppDefinitions(sql: Sql, appKey?: string): Promise<AppDefinition[]> {
  return sql.begin('isolation level repeatable read read only', (tx) =>
    readAppDefinitionsIn(tx, appKey ?? null),
  )
}

async function readAppDefinitionsIn(
  sql: Queryable,
  appKey: string | null,
): Promise<AppDefinition[]> {
  const apps = await sql<
    { app_key: string; name: string; description: string | null; home_url: string | null }[]
  >`
    select app_key, name, description, home_url from shell.apps
    where ${appKey}::text is null or app_key = ${appKey}
    order by app_key collate "C"`
  const branding = await sql<(BrandingDefinition & { appKey: string })[]>`
    select app_key as "appKey", product_name as "productName", logo_url as "logoUrl",
           favicon_url as "faviconUrl", primary_color as "primaryColor",
           accent_color as "accentColor", footer_text as "footerText", theme
    from shell.branding where ${appKey}::text is null or app_key = ${appKey}`
  const items = await sql<ItemRow[]>`
    select m.id::text as id, m.app_key, m.item_key, m.zone, m.parent_id::text as parent_id,
           m.kind, m.label, m.icon, m.href, m.external,
           coalesce(array_agg(g.role order by g.role collate "C") filter (where g.role is not null), '{}') as roles
    from shell.menu_items m
    left join shell.menu_role_grants g on g.menu_item_id = m.id
    where ${appKey}::text is null or m.app_key = ${appKey}
    group by m.id
    order by m.position, m.id`
  const brandingByApp = new Map(branding.map(({ appKey: key, ...rest }) => [key, rest]))
  return apps.map((app) => ({
    key: app.app_key,
    name: app.name,
    description: app.description,
    homeUrl: app.home_url,
    branding: brandingByApp.get(app.app_key) ?? null,
    menus: buildMenus(items.filter((item) => item.app_key === app.app_key)),
  }))
}

/** Rows come ordered by position then id, so each children list is in display order. */
function buildMenus(rows: readonly ItemRow[]): AppDefinition['menus'] {
  const childrenOf = new Map<string | null, ItemRow[]>()
  for (const row of rows) {
    const siblings = childrenOf.get(row.parent_id) ?? []
    siblings.push(row)
    childrenOf.set(row.parent_id, siblings)
  }
  const toDefinition = (row: ItemRow): ItemDefinition => ({
    id: row.item_key,
    kind: row.kind,
    label: row.label,
    icon: row.icon,
    href: row.href,
    external: row.external,
    roles: row.roles,
    children: (childrenOf.get(row.id) ?? []).map(toDefinition),
  })
  const roots = childrenOf.get(null) ?? []
  const zoneItems = (zone: Zone) => roots.filter((row) => row.zone === zone).map(toDefinition)
  return {
    topbar: zoneItems('topbar'),
    sidebar: zoneItems('sidebar'),
    footer: zoneItems('footer'),
    'user-menu': zoneItems('user-menu'),
  }
}

export type ApplyOutcome = 'created' | 'updated' | 'unchanged'

/**
 * Applies one app in one transaction: the app, its branding and its menus are
 * replaced whole. An app whose stored definition already equals the given one
 * is left alone, so that export then import writes nothing and wakes no
 * instance.
 */
export async function applyAppDefinition(sql: Sql, app: AppDefinition): Promise<ApplyOutcome> {
  return sql.begin(async (tx) => {
    // Serializes concurrent imports of the same app; the row may not exist yet.
    await tx`select pg_advisory_xact_lock(hashtext('shell.apps'), hashtext(${app.key}))`
    const [current] = await readAppDefinitionsIn(tx, app.key)
    if (current !== undefined && isDeepStrictEqual(current, app)) return 'unchanged'
    await tx`
      insert into shell.apps (app_key, name, description, home_url)
      values (${app.key}, ${app.name}, ${app.description}, ${app.homeUrl})
      on conflict (app_key) do update
        set name = excluded.name, description = excluded.description, home_url = excluded.home_url`
    await tx`delete from shell.branding where app_key = ${app.key}`
    if (app.branding !== null) {
      const b = app.branding
      await tx`
        insert into shell.branding (app_key, product_name, logo_url, favicon_url,
                                    primary_color, accent_color, footer_text, theme)
        values (${app.key}, ${b.productName}, ${b.logoUrl}, ${b.faviconUrl},
                ${b.primaryColor}, ${b.accentColor}, ${b.footerText}, ${tx.json(b.theme as postgres.JSONValue)})`
    }
    await tx`delete from shell.menu_items where app_key = ${app.key}`
    for (const zone of ZONES) await insertItems(tx, app.key, zone, app.menus[zone], null)
    return current === undefined ? 'created' : 'updated'
  })
}

async function insertItems(
  tx: Queryable,
  appKey: string,
  zone: Zone,
  items: readonly ItemDefinition[],
  parentId: string | null,
): Promise<void> {
  for (const [position, item] of items.entries()) {
    const [row] = await tx<{ id: string }[]>`
      insert into shell.menu_items (app_key, item_key, zone, parent_id, position, kind, label, icon, href, external)
      values (${appKey}, ${item.id}, ${zone}, ${parentId}, ${position}, ${item.kind}, ${item.label},
              ${item.icon}, ${item.href}, ${item.external})
      returning id::text as id`
    if (row === undefined) throw new Error(`insert of menu item ${item.id} returned no id`)
    if (item.roles.length > 0) {
      await tx`
        insert into shell.menu_role_grants (menu_item_id, role)
        select ${row.id}::bigint, unnest(${item.roles as string[]}::text[])`
    }
    await insertItems(tx, appKey, zone, item.children, row.id)
  }
}

/** The export format: defaults left out, so a file reads like a hand-written one. */
export function toDefinitionsFile(apps: readonly AppDefinition[]): { apps: object[] } {
  return {
    apps: apps.map((app) => ({
      key: app.key,
      name: app.name,
      description: app.description,
      homeUrl: app.homeUrl,
      ...(app.branding === null ? {} : { branding: compactBranding(app.branding) }),
      menus: Object.fromEntries(
        ZONES.filter((zone) => app.menus[zone].length > 0).map((zone) => [
          zone,
          app.menus[zone].map(compactItem),
        ]),
      ),
    })),
  }
}

function compactBranding(branding: BrandingDefinition): object {
  const entries = Object.entries(branding).filter(([key, value]) =>
    key === 'theme' ? Object.keys(value as object).length > 0 : value !== null,
  )
  return Object.fromEntries(entries)
}

function compactItem(item: ItemDefinition): object {
  return {
    id: item.id,
    ...(item.kind === 'link' ? {} : { kind: item.kind }),
    label: item.label,
    ...(item.icon === null ? {} : { icon: item.icon }),
    ...(item.href === null ? {} : { href: item.href }),
    ...(item.external ? { external: true } : {}),
    ...(item.roles.length === 0 ? {} : { roles: item.roles }),
    ...(item.children.length === 0 ? {} : { children: item.children.map(compactItem) }),
  }
}
