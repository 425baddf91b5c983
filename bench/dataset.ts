import { join } from 'node:path'
import { connectDatabase } from '../src/db/connect.js'
import { migrateDatabase } from '../src/db/migrate.js'
import postgres from '../src/db/postgres-driver.js'
import { importDefinitions, SEEDS_DIR } from '../src/definitions/import-definitions.js'
import { readDefinitionFiles } from '../src/definitions/read-definition-files.js'

/** Realm roles that menu items are granted to: `role-01` … `role-20`. */
export const GRANT_ROLE_COUNT = 20
export const grantRole = (index: number) => `role-${String(index + 1).padStart(2, '0')}`
/** A generated app's key: `app-0001` … `app-5000`. */
export const generatedAppKey = (index: number) => `app-${String(index + 1).padStart(4, '0')}`
/** A sidebar item of every generated app with no grant: the refresh scenario relabels it. */
export const ALWAYS_VISIBLE_ITEM = 'home'
/** Languages of the generated apps besides their default `en`, as the seed app has them. */
export const LABEL_LOCALES = ['de', 'fr'] as const
/**
 * A generated label's words (the label up to its numbers) in `de` and `fr`,
 * about as long as real translations, so bodies in each locale weigh what
 * they would.
 */
const TRANSLATIONS: Readonly<Record<string, readonly [string, string]>> = {
  Search: ['Suche', 'Rechercher'],
  Notifications: ['Benachrichtigungen', 'Notifications'],
  Create: ['Erstellen', 'Créer'],
  Home: ['Startseite', 'Accueil'],
  Overview: ['Übersicht', "Vue d'ensemble"],
  Section: ['Bereich', 'Rubrique'],
  Page: ['Seite', 'Page'],
  Docs: ['Dokumentation', 'Documentation'],
  Status: ['Status', 'État'],
  Privacy: ['Datenschutz', 'Confidentialité'],
  profile: ['Profil', 'Profil'],
  settings: ['Einstellungen', 'Paramètres'],
  preferences: ['Präferenzen', 'Préférences'],
  alerts: ['Warnungen', 'Alertes'],
  'api keys': ['API-Schlüssel', 'Clés API'],
  support: ['Hilfe', 'Assistance'],
  'Log out': ['Abmelden', 'Se déconnecter'],
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

/** Creates `name`, applies `sql/` and imports `seeds/crm.json`. */
export async function createSeededDatabase(adminUrl: string, databaseUrl: string, name: string) {
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} })
  try {
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
  readonly icon: string
  readonly href: string | null
  readonly external: boolean
  readonly roles: readonly string[]
}

/**
 * The 41 items of one generated app: topbar 3, sidebar 32 (two links and
 * six groups of four), footer 3, user menu 3. About half the items carry
 * one to three of the 20 roles, so a caller's role set decides what is shown.
 */
export function generateAppItems(appKey: string, random: () => number): ItemSpec[] {
  const items: ItemSpec[] = []
  const add = (
    zone: ItemSpec['zone'],
    itemKey: string,
    label: string,
    href: string | null,
    { grantable = true, ...options }: Partial<ItemSpec> & { grantable?: boolean } = {},
  ) => {
    const parentKey = options.parentKey ?? null
    const siblings = items.filter((item) => item.zone === zone && item.parentKey === parentKey)
    const roleCount = grantable && random() >= 0.45 ? 1 + Math.floor(random() * 3) : 0
    items.push({
      appKey,
      zone,
      itemKey,
      label,
      href,
      kind: 'link',
      external: false,
      ...options,
      parentKey,
      position: 10 * siblings.length,
      icon: `icon-${itemKey.replace(/[^a-z0-9]/g, '-')}`,
      roles: pickDistinct(random, roleCount, GRANT_ROLE_COUNT).map(grantRole),
    })
  }

  add('topbar', 'search', 'Search', `/${appKey}/search`, { kind: 'search', grantable: false })
  add('topbar', 'notifications', 'Notifications', `/${appKey}/notifications`)
  add('topbar', 'create', 'Create', `/${appKey}/new`, { kind: 'action' })
  add('sidebar', ALWAYS_VISIBLE_ITEM, 'Home', `/${appKey}`, { grantable: false })
  add('sidebar', 'overview', 'Overview', `/${appKey}/overview`)
  for (let group = 0; group < 6; group += 1) {
    // Four groups have no page of their own, so they vanish when none of their children shows.
    const isPureGrouping = group < 4
    const groupKey = `group-${group}`
    const href = isPureGrouping ? null : `/${appKey}/section-${group}`
    add('sidebar', groupKey, `Section ${group + 1}`, href, { grantable: !isPureGrouping })
    for (let child = 0; child < 4; child += 1) {
      const page = `/${appKey}/section-${group}/page-${child}`
      add('sidebar', `${groupKey}.item-${child}`, `Page ${group + 1}.${child + 1}`, page, {
        parentKey: groupKey,
      })
    }
  }
  add('footer', 'docs', 'Docs', `https://docs.example.com/${appKey}`, { external: true })
  add('footer', 'status', 'Status', `/${appKey}/status`)
  add('footer', 'privacy', 'Privacy', `/${appKey}/privacy`, { grantable: false })
  for (const itemKey of ['profile', 'settings']) {
    add('user-menu', itemKey, itemKey.replace('-', ' '), `/${appKey}/me/${itemKey}`, {
      grantable: itemKey !== 'profile',
    })
  }
  add('user-menu', 'logout', 'Log out', '/logout', { kind: 'action', grantable: false })
  return items
}

/** An item's label in each of LABEL_LOCALES: its words translated, its numbers kept. */
function translateLabel(item: ItemSpec) {
  return LABEL_LOCALES.map((locale, index) => ({
    appKey: item.appKey,
    itemKey: item.itemKey,
    locale,
    label: item.label.replace(
      /^[^\d]+?(?= \d|$)/,
      (words) => TRANSLATIONS[words]?.[index] ?? words,
    ),
  }))
}

/**
 * Inserts `apps` generated apps in one transaction of a set-based statement
 * per table, the rows sent as one JSON document each (the import CLI would
 * take a transaction per app). Every item gets a label in each of
 * LABEL_LOCALES, so each app speaks three languages.
 */
export async function insertGeneratedApps(
  databaseUrl: string,
  options: { apps: number; seed?: number },
) {
  const random = createRandom(options.seed ?? 20_240_601)
  const appKeys = Array.from({ length: options.apps }, (_, index) => generatedAppKey(index))
  const items = appKeys.flatMap((appKey) => generateAppItems(appKey, random))
  const labels = items.flatMap(translateLabel)
  const sql = connectDatabase(databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  try {
    await sql.begin(async (tx) => {
      await tx`
        insert into shell.apps (app_key, name, description, home_url)
        select k, 'Application ' || substr(k, 5), 'Generated application ' || k, '/' || k
        from unnest(${tx.array(appKeys)}::text[]) as k`
      await tx`
        insert into shell.branding (app_key, product_name, logo_url, primary_color, footer_text, theme)
        select k, 'Acme ' || k, '/' || k || '/logo.svg', '#0b5fff', k || ' · internal use only',
               '{"density":"compact","radius":"4px"}'::jsonb
        from unnest(${tx.array(appKeys)}::text[]) as k`
      // Roots first, then children, which find their parent's id by item key.
      for (const batch of [
        items.filter((item) => item.parentKey === null),
        items.filter((item) => item.parentKey !== null),
      ]) {
        await tx`
          insert into shell.menu_items
            (app_key, item_key, zone, parent_id, position, kind, label, icon, href, external)
          select i."appKey", i."itemKey", i.zone, p.id, i.position, i.kind, i.label, i.icon, i.href,
                 i.external
          from jsonb_to_recordset(${JSON.stringify(batch)}::text::jsonb) as i("appKey" text,
            "itemKey" text, zone text, "parentKey" text, position int, kind text, label text,
            icon text, href text, external boolean)
          left join shell.menu_items p on p.app_key = i."appKey" and p.item_key = i."parentKey"`
      }
      await tx`
        insert into shell.menu_role_grants (menu_item_id, role)
        select m.id, unnest(i.roles)
        from jsonb_to_recordset(${JSON.stringify(items)}::text::jsonb)
          as i("appKey" text, "itemKey" text, roles text[])
        join shell.menu_items m on m.app_key = i."appKey" and m.item_key = i."itemKey"`
      await tx`
        insert into shell.menu_item_labels (menu_item_id, locale, label)
        select m.id, l.locale, l.label
        from jsonb_to_recordset(${JSON.stringify(labels)}::text::jsonb)
          as l("appKey" text, "itemKey" text, locale text, label text)
        join shell.menu_items m on m.app_key = l."appKey" and m.item_key = l."itemKey"`
    })
    await sql`analyze`
  } finally {
    await sql.end()
  }
  const grants = items.reduce((sum, item) => sum + item.roles.length, 0)
  return { apps: options.apps, menuItems: items.length, grants, labels: labels.length }
}

/** The seed app's copy with audiences: what the audiences scenario compares with the seed app. */
export const AUDIENCES_APP = 'crm-audiences'

/**
 * A copy of the seed app (its branding, items, grants and labels) as
 * `crm-audiences`, whose five sidebar items are rolled out to 20 to 80 % of
 * their callers and two items shown within windows (one open for a year
 * more, one that opened an hour ago): the same menus, the same callers, with
 * audiences to compute.
 */
export async function insertAudiencesApp(databaseUrl: string): Promise<void> {
  const sql = connectDatabase(databaseUrl, { max: 1, applicationName: 'shell-data-bench' })
  try {
    await sql.begin(async (tx) => {
      await tx`
        insert into shell.apps (app_key, name, description, home_url, default_locale)
        select ${AUDIENCES_APP}, name, description, home_url, default_locale
        from shell.apps where app_key = 'crm'`
      await tx`
        insert into shell.branding (app_key, product_name, logo_url, favicon_url, primary_color,
                                    accent_color, footer_text, theme)
        select ${AUDIENCES_APP}, product_name, logo_url, favicon_url, primary_color, accent_color,
               footer_text, theme
        from shell.branding where app_key = 'crm'`
      // The seed app's items have no parents, so a flat copy keeps the trees.
      await tx`
        insert into shell.menu_items (app_key, item_key, zone, position, kind, label, icon, href,
                                      external, rollout_percent, visible_from, visible_until)
        select ${AUDIENCES_APP}, item_key, zone, position, kind, label, icon, href, external,
               case item_key when 'contacts' then 20 when 'accounts' then 40 when 'leads' then 60
                             when 'opportunities' then 80 when 'activities' then 50 end,
               case item_key when 'reports' then now() - interval '1 day'
                             when 'settings' then now() - interval '1 hour' end,
               case item_key when 'reports' then now() + interval '1 year' end
        from shell.menu_items where app_key = 'crm'`
      await tx`
        insert into shell.menu_role_grants (menu_item_id, role)
        select copy.id, g.role
        from shell.menu_role_grants g
        join shell.menu_items original on original.id = g.menu_item_id and original.app_key = 'crm'
        join shell.menu_items copy on copy.app_key = ${AUDIENCES_APP} and copy.item_key = original.item_key`
      await tx`
        insert into shell.menu_item_labels (menu_item_id, locale, label)
        select copy.id, l.locale, l.label
        from shell.menu_item_labels l
        join shell.menu_items original on original.id = l.menu_item_id and original.app_key = 'crm'
        join shell.menu_items copy on copy.app_key = ${AUDIENCES_APP} and copy.item_key = original.item_key`
    })
  } finally {
    await sql.end()
  }
}
