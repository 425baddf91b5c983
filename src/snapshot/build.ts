import { LRUCache } from 'lru-cache'
import { createAppView, type VariantCache } from './app-view.js'
import { buildMenuTrees } from './menu-tree.js'
import {
  renderAppJson,
  renderAppsInventory,
  renderBrandingJson,
  renderShellHead,
} from './render.js'
import type {
  AppRow,
  AppView,
  BrandingRow,
  MenuItemRow,
  ShellVariant,
  Snapshot,
  SnapshotRows,
} from './types.js'
import { computeSnapshotVersion, type VersionedApp } from './version.js'

export interface BuildSnapshotOptions {
  /** When the rows were read; defaults to now. */
  readonly loadedAt?: Date
  /** Most response variants kept across all apps of the snapshot. */
  readonly variantCacheMaxEntries?: number
  /** Most bytes of variant tails (plus a fixed overhead each) kept across all apps. */
  readonly variantCacheMaxBytes?: number
}

/** Role sets per app are few in practice; this bounds a flood of unusual ones. */
const DEFAULT_VARIANT_CACHE_MAX_ENTRIES = 10_000
/** 64 MiB: ten thousand variants of a large app's menus fit comfortably. */
const DEFAULT_VARIANT_CACHE_MAX_BYTES = 64 * 1024 * 1024
/**
 * Bytes charged per variant besides its tail: the head is shared by all
 * variants of an app and not counted, so this stands for the cache key, the
 * tag, the variant object and the cache's own bookkeeping.
 */
const VARIANT_OVERHEAD_BYTES = 256

/**
 * Turns one consistent read of the database into an immutable snapshot:
 * every app's head, menu trees and role set are prepared here, the apps
 * inventory is rendered, and response variants are rendered on demand and
 * memoized for the snapshot's lifetime. Rows that the database's constraints
 * forbid (orphans, cycles) are left out instead of failing the reload.
 */
export function buildSnapshot(rows: SnapshotRows, options: BuildSnapshotOptions = {}): Snapshot {
  const appRows = new Map<string, AppRow>()
  for (const app of rows.apps) appRows.set(app.appKey, app)
  const apps = [...appRows.values()].sort((a, b) => compareCodeUnits(a.appKey, b.appKey))

  const brandingByApp = new Map<string, BrandingRow>()
  for (const branding of rows.branding) brandingByApp.set(branding.appKey, branding)
  const itemsByApp = groupItemsByApp(rows.menuItems)
  const grantsByItemId = groupGrantsByItem(rows)

  const variants: VariantCache = new LRUCache<string, ShellVariant>({
    max: options.variantCacheMaxEntries ?? DEFAULT_VARIANT_CACHE_MAX_ENTRIES,
    maxSize: options.variantCacheMaxBytes ?? DEFAULT_VARIANT_CACHE_MAX_BYTES,
    sizeCalculation: (variant) => variant.tail.length + VARIANT_OVERHEAD_BYTES,
  })

  const views = new Map<string, AppView>()
  const appJsons: string[] = []
  const versionedApps: VersionedApp[] = []
  for (const app of apps) {
    const { appKey } = app
    const branding = brandingByApp.get(appKey)
    const menus = buildMenuTrees(itemsByApp.get(appKey) ?? [], grantsByItemId)
    const appJson = renderAppJson(app)
    const head = renderShellHead(appJson, renderBrandingJson(app, branding))
    views.set(appKey, createAppView(appKey, head, menus, variants))
    appJsons.push(appJson)
    versionedApps.push({ app, branding, menus })
  }

  return Object.freeze({
    version: computeSnapshotVersion(versionedApps),
    // A copy, so that the caller's Date object cannot move this snapshot's time.
    loadedAt: new Date((options.loadedAt ?? new Date()).getTime()),
    appCount: apps.length,
    appsInventory: renderAppsInventory(appJsons),
    app: (appKey: string) => views.get(appKey),
  })
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

/** Plain UTF-16 code-unit order, the same on every instance whatever its locale. */
function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}
