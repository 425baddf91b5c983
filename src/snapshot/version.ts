import type { AppRow, BrandingRow } from '../db/read-snapshot-rows.js'
import { ZONES } from '../db/vocabulary.js'
import { contentTag } from '../http/content-tag.js'
import type { MenuTrees, UnreachableItem } from './menu-tree.js'
import type { ItemLabels, MenuNode } from './types.js'

/** What one app contributes to the snapshot version. */
export interface VersionedApp {
  readonly app: AppRow
  readonly branding: BrandingRow | undefined
  readonly menus: MenuTrees
}

/**
 * A hash of the whole content, as it is and not as it is shown: a grant, a
 * branding row equal to the fallback, or an unreachable item all count.
 * Items are named by item_key and placed by their tree position (which
 * already encodes the order by position, then id), so row ids, row order and
 * load time never change the version.
 */
export function computeSnapshotVersion(appHashesByKey: readonly string[]): string {
  return contentTag(appHashesByKey.join(','))
}

/**
 * One app's share of the version, kept with the built app: a reload that
 * reuses the app reuses its hash, so the version of an incremental build
 * equals that of a full build of the same content.
 */
export function computeAppHash(app: VersionedApp): string {
  return contentTag(describeApp(app))
}

// The descriptions are JSON built from the fragments the renderer already
// serialized (an item's openJson), which keeps hashing a 50,000-item
// snapshot cheap; JSON's quoting keeps every field unambiguous.

function describeApp({ app, branding, menus }: VersionedApp): string {
  const appFields = JSON.stringify([
    app.appKey,
    app.name,
    app.description,
    app.homeUrl,
    app.defaultLocale,
    branding === undefined
      ? null
      : [
          branding.productName,
          branding.logoUrl,
          branding.faviconUrl,
          branding.primaryColor,
          branding.accentColor,
          branding.footerText,
          branding.theme ?? null,
        ],
  ])
  const zones = ZONES.map((zone) => `[${describeNodes(menus.roots.get(zone) ?? [])}]`)
  const unreachable = JSON.stringify(
    [...menus.unreachable].sort(compareByItemKey).map(describeUnreachable),
  )
  return `[${appFields},${zones.join(',')},${unreachable}]`
}

function describeNodes(nodes: readonly MenuNode[]): string {
  return nodes.map(describeNode).join(',')
}

function describeNode({ position, grants, openJson, localizedLabels, children }: MenuNode): string {
  const localized = JSON.stringify(localizedLabels ?? [])
  return `[${JSON.stringify(position)},${JSON.stringify(grants)},${localized},${openJson}${describeNodes(children)}]}]`
}

/** Entries sorted by tag, so that the order rows were read in never counts. */
function describeLabels(labels: ItemLabels | undefined): string[][] {
  return [...(labels ?? [])].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

function describeUnreachable({ row, parentItemKey, grants, labels }: UnreachableItem): unknown {
  return [
    row.itemKey,
    row.zone,
    parentItemKey,
    row.position,
    row.kind,
    row.label,
    row.icon,
    row.href,
    row.external,
    grants,
    describeLabels(labels),
  ]
}

function compareByItemKey(a: UnreachableItem, b: UnreachableItem): number {
  return a.row.itemKey < b.row.itemKey ? -1 : a.row.itemKey > b.row.itemKey ? 1 : 0
}
