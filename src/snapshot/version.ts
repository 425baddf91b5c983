import type { AppRow, BrandingRow } from '../db/read-snapshot-rows.js'
import { ZONES } from '../domain/vocabulary.js'
import { contentTag } from './content-tag.js'
import type { MenuTrees } from './menu-tree.js'
import type { MenuNode } from './types.js'

/** What one app contributes to the snapshot version. */
export interface VersionedApp {
  readonly app: AppRow
  readonly branding: BrandingRow | undefined
  readonly menus: MenuTrees
}

/**
 * A hash of the content as it is, not only as shown: a grant, or a branding row equal to the
 * fallback, counts. Items are named by item_key and placed by tree position (which encodes the
 * order by position, then id), so row ids, row order and load time never change it.
 */
export function computeSnapshotVersion(appHashesByKey: readonly string[]): string {
  return contentTag(appHashesByKey.join(','))
}

/**
 * One app's share of the version, kept with the built app: an incremental build's version equals
 * a full build's. It also names the content in the cache, and tells a rebuild that changed nothing.
 */
export function computeAppHash({ app, branding, menus }: VersionedApp): string {
  // JSON built from the fragments the renderer already serialized (an item's openJson), which
  // keeps hashing a 50,000-item snapshot cheap; JSON's quoting keeps every field unambiguous.
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
  return contentTag(`[${appFields},${zones.join(',')}]`)
}

function describeNodes(nodes: readonly MenuNode[]): string {
  return nodes.map(describeNode).join(',')
}

function describeNode(node: MenuNode): string {
  const { position, grants, rolloutPercent, visibleFrom, visibleUntil } = node
  const fields = JSON.stringify([position, grants, rolloutPercent, visibleFrom, visibleUntil])
  const localized = JSON.stringify(node.localizedLabels ?? [])
  return `[${fields},${localized},${node.openJson}${describeNodes(node.children)}]}]`
}
