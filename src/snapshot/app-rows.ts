import type {
  AppRow,
  BrandingRow,
  LabelRow,
  MenuItemRow,
  SnapshotRows,
} from '../db/snapshot-rows.js'
import { compareCodeUnits } from '../domain/vocabulary.js'

/** The rows of one app, as a read returns them. */
export interface AppRows {
  readonly app: AppRow
  branding: BrandingRow | undefined
  readonly items: MenuItemRow[]
  /** Each item's granted roles, distinct and sorted, so that equal grants serialize equally. */
  readonly grantsByItemId: Map<string, string[]>
  readonly labelsByItemId: Map<string, LabelRow[]>
}

/** The rows of each app read, in the order the apps were read; rows of no app read are left out. */
export function groupRowsByApp(rows: SnapshotRows): AppRows[] {
  const byApp = new Map<string, AppRows>()
  for (const app of rows.apps) {
    const grouped: AppRows = {
      app,
      branding: undefined,
      items: [],
      grantsByItemId: new Map(),
      labelsByItemId: new Map(),
    }
    byApp.set(app.appKey, grouped)
  }
  for (const branding of rows.branding) {
    const grouped = byApp.get(branding.appKey)
    if (grouped !== undefined) grouped.branding = branding
  }
  const appOfItem = new Map<string, AppRows>()
  for (const item of rows.menuItems) {
    const grouped = byApp.get(item.appKey)
    if (grouped === undefined) continue
    grouped.items.push(item)
    appOfItem.set(item.id, grouped)
  }
  for (const { menuItemId, role } of rows.grants) {
    const grants = appOfItem.get(menuItemId)?.grantsByItemId
    if (grants === undefined) continue
    const roles = grants.get(menuItemId)
    if (roles === undefined) grants.set(menuItemId, [role])
    else roles.push(role)
  }
  for (const label of rows.labels) {
    const labels = appOfItem.get(label.menuItemId)?.labelsByItemId
    if (labels === undefined) continue
    const itemLabels = labels.get(label.menuItemId)
    if (itemLabels === undefined) labels.set(label.menuItemId, [label])
    else itemLabels.push(label)
  }
  for (const { grantsByItemId } of byApp.values()) {
    for (const [itemId, roles] of grantsByItemId) {
      if (roles.length > 1) grantsByItemId.set(itemId, [...new Set(roles)].sort(compareCodeUnits))
    }
  }
  return [...byApp.values()]
}
