import type { Sql } from '../db/connect.js'
import type postgres from '../db/postgres-driver.js'
import { columnValues, selectColumns } from '../db/select-columns.js'
import type { AppRow, BrandingRow, MenuItemRow } from '../db/snapshot-rows.js'
import {
  APP_COLUMNS,
  BRANDING_COLUMNS,
  GRANT_COLUMNS,
  LABEL_COLUMNS,
  MENU_ITEM_COLUMNS,
  mapZones,
  ZONES,
  type Zone,
} from '../domain/vocabulary.js'
import { formatInstant } from './instants.js'
import { planAppChange } from './plan-app-change.js'
import type { AppDefinition, BrandingDefinition, ItemDefinition } from './types.js'
import { sortLabels } from './validate-definitions.js'

/** A menu item row with its granted roles, sorted, and its labels in other locales. */
type ItemWithRoles = MenuItemRow & {
  readonly roles: string[]
  readonly labels: Record<string, string> | null
}

/**
 * Reads app definitions (all apps, or those in `appKeys`) in the import format, sorted by key, in
 * one lock-free read-only snapshot: a dry run and an export never wait.
 */
export async function readAppDefinitions(
  sql: Sql,
  appKeys?: readonly string[],
): Promise<AppDefinition[]> {
  return sql.begin('isolation level repeatable read read only', (tx) =>
    readAppDefinitionsIn(tx, appKeys ?? null),
  )
}

async function readAppDefinitionsIn(
  sql: postgres.TransactionSql,
  appKeys: readonly string[] | null,
): Promise<AppDefinition[]> {
  const keys = appKeys === null ? null : sql.array([...appKeys])
  const apps = await sql<AppRow[]>`
    select ${selectColumns(sql, APP_COLUMNS)} from shell.apps
    where ${keys}::text[] is null or app_key = any(${keys}::text[])
    order by app_key collate "C"`
  const branding = await sql<BrandingRow[]>`
    select ${selectColumns(sql, BRANDING_COLUMNS)} from shell.branding
    where ${keys}::text[] is null or app_key = any(${keys}::text[])`
  const items = await sql<ItemWithRoles[]>`
    select ${selectColumns(sql, MENU_ITEM_COLUMNS, 'm')},
           coalesce(array_agg(g.role order by g.role collate "C") filter (where g.role is not null), '{}') as roles,
           (select jsonb_object_agg(l.locale, l.label) from shell.menu_item_labels l
            where l.menu_item_id = m.id) as labels
    from shell.menu_items m
    left join shell.menu_role_grants g on g.menu_item_id = m.id
    where ${keys}::text[] is null or m.app_key = any(${keys}::text[])
    group by m.id
    order by m.position, m.id`
  const brandingByApp = new Map(branding.map(({ appKey: key, ...rest }) => [key, rest]))
  return apps.map((app) => ({
    key: app.appKey,
    name: app.name,
    description: app.description,
    homeUrl: app.homeUrl,
    defaultLocale: app.defaultLocale,
    branding: (brandingByApp.get(app.appKey) as BrandingDefinition | undefined) ?? null,
    menus: buildMenus(items.filter((item) => item.appKey === app.appKey)),
  }))
}

/** Rows come ordered by position then id, so each children list is in display order. */
function buildMenus(rows: readonly ItemWithRoles[]): AppDefinition['menus'] {
  const childrenOf = new Map<string | null, ItemWithRoles[]>()
  for (const row of rows) {
    const siblings = childrenOf.get(row.parentId) ?? []
    siblings.push(row)
    childrenOf.set(row.parentId, siblings)
  }
  const toDefinition = (row: ItemWithRoles): ItemDefinition => ({
    id: row.itemKey,
    kind: row.kind,
    label: row.label,
    labels: sortLabels(row.labels ?? {}),
    icon: row.icon,
    href: row.href,
    external: row.external,
    roles: row.roles,
    rollout: row.rolloutPercent,
    visibleFrom: row.visibleFrom === null ? null : formatInstant(row.visibleFrom),
    visibleUntil: row.visibleUntil === null ? null : formatInstant(row.visibleUntil),
    children: (childrenOf.get(row.id) ?? []).map(toDefinition),
  })
  const roots = childrenOf.get(null) ?? []
  return mapZones((zone) => roots.filter((row) => row.zone === zone).map(toDefinition))
}

export type ApplyOutcome = 'created' | 'updated' | 'unchanged'

/** Applies one app whole in a transaction; an unchanged plan writes nothing, waking no instance. */
export async function applyAppDefinition(sql: Sql, app: AppDefinition): Promise<ApplyOutcome> {
  return sql.begin(async (tx) => {
    // Serializes concurrent imports of the same app; the row may not exist yet.
    await tx`select pg_advisory_xact_lock(hashtext('shell.apps'), hashtext(${app.key}))`
    const [current] = await readAppDefinitionsIn(tx, [app.key])
    const plan = planAppChange(current ?? null, app)
    if (plan.action === 'unchanged') return 'unchanged'
    const appValues = columnValues(APP_COLUMNS, {
      appKey: app.key,
      name: app.name,
      description: app.description,
      homeUrl: app.homeUrl,
      defaultLocale: app.defaultLocale,
    })
    const updatable = Object.keys(appValues).filter((column) => column !== APP_COLUMNS.appKey)
    await tx`
      insert into shell.apps ${tx(appValues)}
      on conflict (app_key) do update set ${tx(appValues, updatable)}`
    await tx`delete from shell.branding where app_key = ${app.key}`
    if (app.branding !== null) {
      const { theme, ...fields } = app.branding
      await tx`insert into shell.branding ${tx(
        columnValues(BRANDING_COLUMNS, {
          ...fields,
          appKey: app.key,
          theme: tx.json(theme as postgres.JSONValue),
        }),
      )}`
    }
    await tx`delete from shell.menu_items where app_key = ${app.key}`
    for (const zone of ZONES) await insertItems(tx, app.key, zone, app.menus[zone], null)
    return plan.action === 'create' ? 'created' : 'updated'
  })
}

async function insertItems(
  tx: postgres.TransactionSql,
  appKey: string,
  zone: Zone,
  items: readonly ItemDefinition[],
  parentId: string | null,
): Promise<void> {
  for (const [position, item] of items.entries()) {
    const [row] = await tx<{ id: string }[]>`
      insert into shell.menu_items ${tx(
        columnValues(MENU_ITEM_COLUMNS, {
          appKey,
          itemKey: item.id,
          zone,
          parentId,
          position,
          kind: item.kind,
          label: item.label,
          icon: item.icon,
          href: item.href,
          external: item.external,
          rolloutPercent: item.rollout,
          visibleFrom: toDate(item.visibleFrom),
          visibleUntil: toDate(item.visibleUntil),
        }),
      )}
      returning id`
    if (row === undefined) throw new Error(`insert of menu item ${item.id} returned no id`)
    const grants = item.roles.map((role) =>
      columnValues(GRANT_COLUMNS, { menuItemId: row.id, role }),
    )
    if (grants.length > 0) await tx`insert into shell.menu_role_grants ${tx(grants)}`
    const labels = Object.entries(item.labels).map(([locale, label]) =>
      columnValues(LABEL_COLUMNS, { menuItemId: row.id, locale, label }),
    )
    if (labels.length > 0) await tx`insert into shell.menu_item_labels ${tx(labels)}`
    await insertItems(tx, appKey, zone, item.children, row.id)
  }
}

function toDate(instant: string | null): Date | null {
  return instant === null ? null : new Date(instant)
}
