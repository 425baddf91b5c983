import { type AppLocales, createAppView } from './app-view.js'
import { buildMenuTrees } from './menu-tree.js'
import {
  renderAppJson,
  renderAppsInventory,
  renderBrandingJson,
  renderInventoryEntryJson,
  renderShellHead,
} from './render.js'
import type {
  AppRow,
  AppView,
  BrandingRow,
  ItemLabels,
  LabelRow,
  MenuItemRow,
  RenderedBody,
  Snapshot,
  SnapshotRows,
} from './types.js'
import { createVariantCache, type VariantCache } from './variant-cache.js'
import { computeAppHash, computeSnapshotVersion } from './version.js'

export interface BuildSnapshotOptions {
  /** When the rows were read; defaults to now. */
  readonly loadedAt?: Date
  /** Most response variants kept across all apps of the snapshot. */
  readonly variantCacheMaxEntries?: number
  /** Most bytes of variant tails (plus a fixed overhead each) kept across all apps. */
  readonly variantCacheMaxBytes?: number
  /** The snapshot in service, whose built apps (and memoized variants) may be reused. */
  readonly previous?: Snapshot
  /** Apps known unchanged since `previous` (their revision did not move); their rows may be absent. */
  readonly unchangedApps?: ReadonlySet<string>
}

/** What a snapshot keeps of each app, so that the next build can take it over as it is. */
interface BuiltApp {
  readonly view: AppView
  /** The app's entry in the inventory. */
  readonly inventoryJson: string
  readonly hash: string
}

interface SnapshotInternals {
  readonly apps: ReadonlyMap<string, BuiltApp>
  readonly variants: VariantCache
  /** The inventory's entries, in order, as rendered into `appsInventory`. */
  readonly inventoryEntries: readonly string[]
  readonly appsInventory: RenderedBody
}

/** Per snapshot, out of its public face: only the next build reads it. */
const internalsOf = new WeakMap<Snapshot, SnapshotInternals>()

/** Role sets per app are few in practice; this bounds a flood of unusual ones. */
const DEFAULT_VARIANT_CACHE_MAX_ENTRIES = 10_000
/** 64 MiB: ten thousand variants of a large app's menus fit comfortably. */
const DEFAULT_VARIANT_CACHE_MAX_BYTES = 64 * 1024 * 1024

/**
 * Turns one consistent read of the database into an immutable snapshot:
 * every app's head, menu trees and role set are prepared here, the apps
 * inventory is rendered, and response variants are rendered on demand and
 * memoized. Apps known unchanged since the previous snapshot are taken over
 * from it whole, so a reload after a change to one app builds one app.
 * Rows that the database's constraints forbid (orphans, cycles) are left out
 * instead of failing the reload.
 */
export function buildSnapshot(rows: SnapshotRows, options: BuildSnapshotOptions = {}): Snapshot {
  const appRows = new Map<string, AppRow>()
  for (const app of rows.apps) appRows.set(app.appKey, app)
  const previous = options.previous === undefined ? undefined : internalsOf.get(options.previous)
  // The apps are those read and those taken over unchanged, whose rows need not be read.
  const appKeys = [...appRows.keys()]
  for (const appKey of options.unchangedApps ?? []) {
    if (!appRows.has(appKey) && previous?.apps.has(appKey)) appKeys.push(appKey)
  }
  appKeys.sort(compareCodeUnits)

  const brandingByApp = new Map<string, BrandingRow>()
  for (const branding of rows.branding) brandingByApp.set(branding.appKey, branding)
  const itemsByApp = groupItemsByApp(rows.menuItems)
  const grantsByItemId = groupGrantsByItem(rows)
  const labelRowsByItemId = groupLabelsByItem(rows.labels)

  // One variant cache for the life of the feed: reused apps keep their warm variants, and
  // keys carry the app's content hash, so a changed app's old variants are never served.
  const variants: VariantCache =
    previous?.variants ??
    createVariantCache({
      maxEntries: options.variantCacheMaxEntries ?? DEFAULT_VARIANT_CACHE_MAX_ENTRIES,
      maxBytes: options.variantCacheMaxBytes ?? DEFAULT_VARIANT_CACHE_MAX_BYTES,
    })

  const builtApps = new Map<string, BuiltApp>()
  for (const appKey of appKeys) {
    const reusable = options.unchangedApps?.has(appKey) ? previous?.apps.get(appKey) : undefined
    const app = appRows.get(appKey)
    if (reusable !== undefined || app === undefined) {
      if (reusable !== undefined) builtApps.set(appKey, reusable)
      continue
    }
    const branding = brandingByApp.get(appKey)
    const items = itemsByApp.get(appKey) ?? []
    const { appLocales, labelsByItemId } = collectLabels(app, items, labelRowsByItemId)
    const menus = buildMenuTrees(items, grantsByItemId, labelsByItemId)
    const appJson = renderAppJson(app)
    const head = renderShellHead(appJson, renderBrandingJson(app, branding))
    const hash = computeAppHash({ app, branding, menus })
    const prefix = variantKeyPrefix(appKey, hash)
    const view = createAppView(appKey, head, menus, appLocales, variants, prefix)
    const inventoryJson = renderInventoryEntryJson(appJson, view.defaultLocale, view.locales)
    builtApps.set(appKey, { view, inventoryJson, hash })
  }

  if (previous !== undefined) dropStaleVariants(variants, previous.apps, builtApps)

  const built = [...builtApps.values()]
  const inventoryEntries = built.map((entry) => entry.inventoryJson)
  // Most reloads change menus, not the inventory: its bytes and tag are then kept as they were.
  const appsInventory =
    previous !== undefined && haveSameItems(previous.inventoryEntries, inventoryEntries)
      ? previous.appsInventory
      : renderAppsInventory(inventoryEntries)
  const snapshot: Snapshot = Object.freeze({
    version: computeSnapshotVersion(built.map((entry) => entry.hash)),
    // A copy, so that the caller's Date object cannot move this snapshot's time.
    loadedAt: new Date((options.loadedAt ?? new Date()).getTime()),
    appKeys: Object.freeze(appKeys),
    appsInventory,
    app: (appKey: string) => builtApps.get(appKey)?.view,
  })
  internalsOf.set(snapshot, { apps: builtApps, variants, inventoryEntries, appsInventory })
  return snapshot
}

/**
 * Drops the variants of app contents the new snapshot no longer has (an app
 * changed or removed): no request will ask for them again, and left to the
 * LRU they would fill it, one set of role-set variants per change, before
 * anything pushed them out.
 */
function dropStaleVariants(
  variants: VariantCache,
  before: ReadonlyMap<string, BuiltApp>,
  after: ReadonlyMap<string, BuiltApp>,
): void {
  for (const [appKey, { hash }] of before) {
    if (after.get(appKey)?.hash !== hash) variants.dropPrefix(variantKeyPrefix(appKey, hash))
  }
}

function haveSameItems(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item, index) => item === b[index])
}

/** App keys match ^[a-z0-9][a-z0-9-]*$ and hashes are base64url: "\0" separates them safely. */
function variantKeyPrefix(appKey: string, hash: string): string {
  return `${appKey}\0${hash}\0`
}

function groupItemsByApp(items: readonly MenuItemRow[]): Map<string, MenuItemRow[]> {
  const itemsByApp = new Map<string, MenuItemRow[]>()
  for (const item of items) {
    const appItems = itemsByApp.get(item.appKey)
    if (appItems === undefined) itemsByApp.set(item.appKey, [item])
    else appItems.push(item)
  }
  return itemsByApp
}

/** Each item's granted roles, distinct and sorted, so that equal grants serialize equally. */
function groupGrantsByItem(rows: SnapshotRows): Map<string, readonly string[]> {
  const grantsByItemId = new Map<string, string[]>()
  for (const grant of rows.grants) {
    const roles = grantsByItemId.get(grant.menuItemId)
    if (roles === undefined) grantsByItemId.set(grant.menuItemId, [grant.role])
    else roles.push(grant.role)
  }
  for (const [itemId, roles] of grantsByItemId) {
    if (roles.length > 1) grantsByItemId.set(itemId, [...new Set(roles.sort(compareCodeUnits))])
  }
  return grantsByItemId
}

function groupLabelsByItem(labels: readonly LabelRow[]): Map<string, LabelRow[]> {
  const labelsByItemId = new Map<string, LabelRow[]>()
  for (const label of labels) {
    const itemLabels = labelsByItemId.get(label.menuItemId)
    if (itemLabels === undefined) labelsByItemId.set(label.menuItemId, [label])
    else itemLabels.push(label)
  }
  return labelsByItemId
}

/**
 * The app's locales and each item's labels by lowercased tag. Tags compare
 * case-insensitively: when rows spell one language two ways (`de-CH` on one
 * item, `de-ch` on another), the app lists it once, spelled as the first in
 * code-unit order, so every instance agrees. Labels in the default locale
 * are left out: that language's label is `menu_items.label`.
 */
function collectLabels(
  app: AppRow,
  items: readonly MenuItemRow[],
  labelRowsByItemId: ReadonlyMap<string, readonly LabelRow[]>,
): { appLocales: AppLocales; labelsByItemId: Map<string, ItemLabels> } {
  const defaultLowercase = app.defaultLocale.toLowerCase()
  const byLowercase = new Map<string, string>([[defaultLowercase, app.defaultLocale]])
  const labelsByItemId = new Map<string, ItemLabels>()
  for (const item of items) {
    const rows = labelRowsByItemId.get(item.id)
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

/** Plain UTF-16 code-unit order, the same on every instance whatever its locale. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
