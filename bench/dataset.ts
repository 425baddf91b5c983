import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect.js'
import { migrateDatabase } from '../src/db/migrate.js'
import postgres from '../src/db/postgres-driver.js'
import { importDefinitions, readDefinitionFiles, SEEDS_DIR } from '../src/db/seed.js'

/** Realm roles that menu items are granted to: `role-01` … `role-20`. */
export const GRANT_ROLE_COUNT = 20
export const grantRole = (index: number) => `role-${String(index + 1).padStart(2, '0')}`

/** A generated app's key: `app-0001` … `app-1000`. */
export const generatedAppKey = (index: number) => `app-${String(index + 1).padStart(4, '0')}`

/**
 * A sidebar root of every generated app with no grant, so every caller sees
 * it: the refresh scenario relabels it and waits for the caller's ETag to move.
 */
export const ALWAYS_VISIBLE_ITEM = 'home'

export interface DatasetSummary {
  readonly apps: number
  readonly menuItems: number
  readonly grants: number
  readonly nestedItems: number
  readonly insertMs: number
}

/** mulberry32: a small seeded PRNG, so every run generates the same data. */
export function createRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** `count` distinct indexes below `limit`, ascending. */
export function pickDistinct(random: () => number, count: number, limit: number): number[] {
  const picked = new Set<number>()
  while (picked.size < Math.min(count, limit)) picked.add(Math.floor(random() * limit))
  return [...picked].sort((a, b) => a - b)
}

/** Creates `name` (dropping an old one), applies `sql/` and imports `seeds/crm.json`. */
export async function createSeededDatabase(
  adminUrl: string,
  databaseUrl: string,
  name: string,
): Promise<void> {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`drop database if exists "${name}" with (force)`)
    await admin.unsafe(`create database "${name}"`)
  } finally {
    await admin.end()
  }
  const sql = connectDatabase(databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  try {
    await migrateDatabase(sql)
    await importDefinitions(sql, await readDefinitionFiles([join(SEEDS_DIR, 'crm.json')]))
  } finally {
    await sql.end()
  }
}

interface ItemSpec {
  readonly appKey: string
  readonly itemKey: string
  readonly zone: 'topbar' | 'sidebar' | 'footer' | 'user-menu'
  readonly parentKey: string | null
  readonly position: number
  readonly kind: 'link' | 'search' | 'action'
  readonly label: string
  readonly icon: string | null
  readonly href: string | null
  readonly external: boolean
  readonly roles: readonly string[]
}

/**
 * The items of one generated app, 50 in all: topbar 3, sidebar 37 (two plain
 * links and seven groups of four children; four of the groups have no href,
 * so they vanish when none of their children is visible), footer 3, user
 * menu 7. About half the items carry one to three of the 20 roles, so a
 * caller's role set decides what is shown.
 */
export function generateAppItems(appKey: string, random: () => number): ItemSpec[] {
  const items: ItemSpec[] = []
  const grants = (grantable: boolean): string[] => {
    if (!grantable || random() < 0.45) return []
    return pickDistinct(random, 1 + Math.floor(random() * 3), GRANT_ROLE_COUNT).map(grantRole)
  }
  const add = (
    spec: Omit<ItemSpec, 'appKey' | 'roles' | 'external' | 'kind' | 'icon'> & {
      kind?: ItemSpec['kind']
      external?: boolean
      grantable?: boolean
    },
  ) => {
    const { grantable = true, ...rest } = spec
    items.push({
      appKey,
      kind: 'link',
      external: false,
      icon: `icon-${spec.itemKey.replace(/[^a-z0-9]/g, '-')}`,
      ...rest,
      roles: grants(grantable),
    })
  }

  add({
    itemKey: 'search',
    zone: 'topbar',
    parentKey: null,
    position: 0,
    kind: 'search',
    label: 'Search',
    href: `/${appKey}/search`,
    grantable: false,
  })
  add({
    itemKey: 'notifications',
    zone: 'topbar',
    parentKey: null,
    position: 10,
    label: 'Notifications',
    href: `/${appKey}/notifications`,
  })
  add({
    itemKey: 'create',
    zone: 'topbar',
    parentKey: null,
    position: 20,
    kind: 'action',
    label: 'Create',
    href: `/${appKey}/new`,
  })

  add({
    itemKey: ALWAYS_VISIBLE_ITEM,
    zone: 'sidebar',
    parentKey: null,
    position: 0,
    label: 'Home',
    href: `/${appKey}`,
    grantable: false,
  })
  add({
    itemKey: 'overview',
    zone: 'sidebar',
    parentKey: null,
    position: 10,
    label: 'Overview',
    href: `/${appKey}/overview`,
  })
  for (let group = 0; group < 7; group += 1) {
    const groupKey = `group-${group}`
    const isPureGrouping = group < 4
    add({
      itemKey: groupKey,
      zone: 'sidebar',
      parentKey: null,
      position: 20 + group * 10,
      label: `Section ${group + 1}`,
      href: isPureGrouping ? null : `/${appKey}/section-${group}`,
      grantable: !isPureGrouping,
    })
    for (let child = 0; child < 4; child += 1) {
      add({
        itemKey: `${groupKey}.item-${child}`,
        zone: 'sidebar',
        parentKey: groupKey,
        position: child * 10,
        label: `Page ${group + 1}.${child + 1}`,
        href: `/${appKey}/section-${group}/page-${child}`,
      })
    }
  }

  const footer = ['docs', 'status', 'privacy']
  footer.forEach((itemKey, index) => {
    add({
      itemKey,
      zone: 'footer',
      parentKey: null,
      position: index * 10,
      label: itemKey[0]?.toUpperCase() + itemKey.slice(1),
      href: itemKey === 'docs' ? `https://docs.example.com/${appKey}` : `/${appKey}/${itemKey}`,
      external: itemKey === 'docs',
      grantable: itemKey !== 'privacy',
    })
  })

  const userMenu = ['profile', 'settings', 'preferences', 'alerts', 'api-keys', 'support', 'logout']
  userMenu.forEach((itemKey, index) => {
    add({
      itemKey,
      zone: 'user-menu',
      parentKey: null,
      position: index * 10,
      kind: itemKey === 'logout' ? 'action' : 'link',
      label: itemKey.replace('-', ' '),
      href: itemKey === 'logout' ? '/logout' : `/${appKey}/me/${itemKey}`,
      grantable: itemKey !== 'logout' && itemKey !== 'profile',
    })
  })
  return items
}

/**
 * Inserts `appCount` generated apps in one transaction of five set-based
 * statements (arrays unnested server-side): apps, branding, root items,
 * child items joined to their parents by item key, grants joined to their
 * items. The import CLI would take one transaction per app.
 */
export async function insertGeneratedApps(
  databaseUrl: string,
  appCount: number,
  seed = 20_240_601,
): Promise<DatasetSummary> {
  const random = createRandom(seed)
  const appKeys: string[] = []
  const items: ItemSpec[] = []
  for (let index = 0; index < appCount; index += 1) {
    const appKey = generatedAppKey(index)
    appKeys.push(appKey)
    items.push(...generateAppItems(appKey, random))
  }
  const roots = items.filter((item) => item.parentKey === null)
  const children = items.filter((item) => item.parentKey !== null)
  const grants = items.flatMap((item) =>
    item.roles.map((role) => ({ appKey: item.appKey, itemKey: item.itemKey, role })),
  )

  const sql = connectDatabase(databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  const startedAt = performance.now()
  try {
    await sql.begin(async (tx) => {
      const text = (values: readonly (string | null)[]) => tx.array(values as string[])
      await tx`
        insert into shell.apps (app_key, name, description, home_url)
        select * from unnest(
          ${text(appKeys)}::text[],
          ${text(appKeys.map((key) => `Application ${key.slice(4)}`))}::text[],
          ${text(appKeys.map((key) => `Generated application ${key} for the benchmark.`))}::text[],
          ${text(appKeys.map((key) => `/${key}`))}::text[])`
      await tx`
        insert into shell.branding (app_key, product_name, logo_url, primary_color, footer_text, theme)
        select k, 'Acme ' || k, '/' || k || '/logo.svg', '#0b5fff', k || ' · internal use only',
               '{"density":"compact","radius":"4px"}'::jsonb
        from unnest(${text(appKeys)}::text[]) as k`
      // Roots first, then children, which find their parent's id by item key.
      for (const batch of [roots, children]) {
        const column = (pick: (item: ItemSpec) => string | null) => text(batch.map(pick))
        await tx`
          insert into shell.menu_items
            (app_key, item_key, zone, parent_id, position, kind, label, icon, href, external)
          select i.app_key, i.item_key, i.zone, p.id, i.position, i.kind, i.label, i.icon, i.href,
                 i.external
          from unnest(
            ${column((item) => item.appKey)}::text[],
            ${column((item) => item.itemKey)}::text[],
            ${column((item) => item.zone)}::text[],
            ${column((item) => item.parentKey)}::text[],
            ${tx.array(batch.map((item) => item.position))}::int[],
            ${column((item) => item.kind)}::text[],
            ${column((item) => item.label)}::text[],
            ${column((item) => item.icon)}::text[],
            ${column((item) => item.href)}::text[],
            ${tx.array(batch.map((item) => item.external))}::boolean[])
            as i(app_key, item_key, zone, parent_key, position, kind, label, icon, href, external)
          left join shell.menu_items p
            on i.parent_key is not null and p.app_key = i.app_key and p.item_key = i.parent_key`
      }
      await tx`
        insert into shell.menu_role_grants (menu_item_id, role)
        select m.id, g.role
        from unnest(
          ${text(grants.map((grant) => grant.appKey))}::text[],
          ${text(grants.map((grant) => grant.itemKey))}::text[],
          ${text(grants.map((grant) => grant.role))}::text[]) as g(app_key, item_key, role)
        join shell.menu_items m on m.app_key = g.app_key and m.item_key = g.item_key`
    })
    await sql`analyze`
  } finally {
    await sql.end()
  }
  return {
    apps: appCount,
    menuItems: items.length,
    grants: grants.length,
    nestedItems: children.length,
    insertMs: Math.round(performance.now() - startedAt),
  }
}
