/** One app, from its rows to what a snapshot keeps of it; build.ts puts the apps together. */
import type {
  AppRow,
  BrandingRow,
  LabelRow,
  MenuItemRow,
  SnapshotRows,
} from '../db/read-snapshot-rows.js'
import { compareCodeUnits } from '../domain/vocabulary.js'
import { type AppLocales, createAppView } from './app-view.js'
import { isInWindow } from './audience.js'
import { buildMenuTrees, type MenuTrees } from './menu-tree.js'
import {
  renderAppJson,
  renderBrandingJson,
  renderInventoryEntryJson,
  renderShellHead,
} from './render.js'
import type { AppView, ItemLabels } from './types.js'
import type { VariantCache } from './variant-cache.js'
import { computeAppHash } from './version.js'

/** What a snapshot keeps of each app, so that the next build can take it over as it is. */
export interface BuiltApp extends TimedView {
  /** What its views are made from, at any time. */
  readonly head: Buffer
  readonly menus: MenuTrees
  readonly appLocales: AppLocales
  readonly inventoryJson: string
  readonly hash: string
  /** The revision its rows were read at: an incremental read at the same revision changes nothing. */
  readonly revision: string | null
}

/** An app's view for one stretch of time, between two window boundaries. */
export interface TimedView {
  readonly view: AppView
  /** Names the view's variants in the cache: the app's content and which items are out of their windows. */
  readonly cacheKeyPrefix: string
  /** The next instant a window of the app opens or closes; null: none ahead. */
  readonly nextChangeAt: number | null
}

export interface AppRows {
  readonly app: AppRow
  readonly branding: BrandingRow | undefined
  readonly items: MenuItemRow[]
  /** Each item's granted roles, distinct and sorted, so that equal grants serialize equally. */
  readonly grantsByItemId: Map<string, string[]>
  readonly labelsByItemId: Map<string, LabelRow[]>
}

export function buildApp(appRows: AppRows, variants: VariantCache, now: number): BuiltApp {
  const { app, branding, items, grantsByItemId } = appRows
  const { appLocales, labelsByItemId } = collectLabels(appRows)
  const menus = buildMenuTrees(items, grantsByItemId, labelsByItemId)
  const appJson = renderAppJson(app)
  const head = renderShellHead(appJson, renderBrandingJson(app, branding))
  const hash = computeAppHash({ app, branding, menus })
  const parts = { head, menus, appLocales, hash }
  const timed = viewAt(app.appKey, parts, variants, now)
  const { defaultLocale, locales } = timed.view
  const inventoryJson = renderInventoryEntryJson(appJson, defaultLocale, locales)
  return { ...parts, ...timed, inventoryJson, revision: app.revision }
}

/**
 * The app's view at `now`, and when to make it again. App keys match ^[a-z0-9][a-z0-9-]*$,
 * hashes are base64url and item keys hold no comma: "\0" and "," keep the prefix's parts apart.
 */
export function viewAt(
  appKey: string,
  parts: Pick<BuiltApp, 'head' | 'menus' | 'appLocales' | 'hash'>,
  variants: VariantCache,
  now: number,
): TimedView {
  const { windowed } = parts.menus
  const outOfWindow = new Set(windowed.filter((node) => !isInWindow(node, now)))
  const hidden = [...outOfWindow].map((node) => node.itemKey).sort(compareCodeUnits)
  const cacheKeyPrefix = `${appKey}\0${parts.hash}\0${hidden.join(',')}\0`
  const { head, menus, appLocales } = parts
  const view = createAppView(appKey, head, menus, appLocales, variants, cacheKeyPrefix, outOfWindow)
  const ahead = windowed
    .flatMap((node) => [node.visibleFrom, node.visibleUntil])
    .filter((at): at is number => at !== null && at > now)
  return { view, cacheKeyPrefix, nextChangeAt: ahead.length === 0 ? null : Math.min(...ahead) }
}

/** The rows of each app read, in the order the apps were read. */
export function groupRowsByApp(rows: SnapshotRows): AppRows[] {
  const byApp = new Map<string, AppRows>()
  for (const app of rows.apps) {
    byApp.set(app.appKey, {
      app,
      branding: undefined,
      items: [],
      grantsByItemId: new Map(),
      labelsByItemId: new Map(),
    })
  }
  for (const branding of rows.branding) {
    const appRows = byApp.get(branding.appKey)
    if (appRows !== undefined) byApp.set(branding.appKey, { ...appRows, branding })
  }
  const appOfItem = new Map<string, AppRows>()
  for (const item of rows.menuItems) {
    const appRows = byApp.get(item.appKey)
    if (appRows === undefined) continue
    appRows.items.push(item)
    appOfItem.set(item.id, appRows)
  }
  for (const { menuItemId, role } of rows.grants) {
    const grants = appOfItem.get(menuItemId)?.grantsByItemId
    grants?.set(menuItemId, [...(grants.get(menuItemId) ?? []), role])
  }
  for (const label of rows.labels) {
    const labels = appOfItem.get(label.menuItemId)?.labelsByItemId
    labels?.set(label.menuItemId, [...(labels.get(label.menuItemId) ?? []), label])
  }
  for (const { grantsByItemId } of byApp.values()) {
    for (const [itemId, roles] of grantsByItemId) {
      grantsByItemId.set(itemId, [...new Set(roles)].sort(compareCodeUnits))
    }
  }
  return [...byApp.values()]
}

/**
 * The app's locales and each item's labels by lowercased tag. A language spelled two ways
 * (`de-CH`, `de-ch`) is listed once, as the first in code-unit order, so every instance agrees;
 * labels in the default locale are left out: that language's label is `menu_items.label`.
 */
function collectLabels({ app, items, labelsByItemId: rowsByItemId }: AppRows): {
  appLocales: AppLocales
  labelsByItemId: Map<string, ItemLabels>
} {
  const defaultLowercase = app.defaultLocale.toLowerCase()
  const byLowercase = new Map<string, string>([[defaultLowercase, app.defaultLocale]])
  const labelsByItemId = new Map<string, ItemLabels>()
  for (const item of items) {
    const rows = rowsByItemId.get(item.id)
    if (rows === undefined) continue
    const labels = new Map<string, string>()
    for (const { locale, label } of rows) {
      const lowercase = locale.toLowerCase()
      if (lowercase === defaultLowercase) continue
      labels.set(lowercase, label)
      const spelled = byLowercase.get(lowercase)
      if (spelled === undefined || locale < spelled) byLowercase.set(lowercase, locale)
    }
    if (labels.size > 0) labelsByItemId.set(item.id, labels)
  }
  return { appLocales: { defaultLocale: app.defaultLocale, byLowercase }, labelsByItemId }
}
