import type { MenuItemRow } from '../db/read-snapshot-rows.js'
import { compareCodeUnits, sortedEntries, ZONES, type Zone } from '../domain/vocabulary.js'
import { renderItemOpenJson } from './render.js'
import type { ItemLabels, MenuNode } from './types.js'

export interface MenuTrees {
  readonly roots: ReadonlyMap<Zone, readonly MenuNode[]>
  /** Roles granted on reachable items: the only roles that can change what a caller sees. */
  readonly grantedRoles: ReadonlySet<string>
  /** Reachable items with a rollout, by item key: the only ones whose buckets can change it. */
  readonly rollouts: readonly MenuNode[]
  /** Reachable items with a window: the only ones that time can show or hide. */
  readonly windowed: readonly MenuNode[]
}

const NO_GRANTS: readonly string[] = Object.freeze([])
const NO_NODES: readonly MenuNode[] = Object.freeze([])

/**
 * Builds the four zone trees of one app, ordered by position, then id, at every level. Items no
 * root leads to (a parent missing, in another zone, or in a cycle) are left out, not rejected:
 * the database forbids them, and a reload must not fail on them.
 */
export function buildMenuTrees(
  items: readonly MenuItemRow[],
  /** Each item's granted roles, distinct and sorted. */
  grantsByItemId: ReadonlyMap<string, readonly string[]>,
  /** Each labelled item's labels in the app's other locales. */
  labelsByItemId: ReadonlyMap<string, ItemLabels>,
): MenuTrees {
  const itemsById = new Map<string, MenuItemRow>()
  for (const item of items) itemsById.set(item.id, item)

  const rootRows = new Map<Zone, MenuItemRow[]>(ZONES.map((zone) => [zone, []]))
  const childRowsByParentId = new Map<string, MenuItemRow[]>()
  for (const item of items) {
    if (item.parentId === null) {
      rootRows.get(item.zone)?.push(item)
      continue
    }
    const parent = itemsById.get(item.parentId)
    if (parent === undefined || parent.zone !== item.zone) continue
    const siblings = childRowsByParentId.get(parent.id)
    if (siblings === undefined) childRowsByParentId.set(parent.id, [item])
    else siblings.push(item)
  }

  // Each row is placed once, even if duplicate ids would lead to it twice.
  const placed = new Set<MenuItemRow>()
  const grantedRoles = new Set<string>()
  const rollouts: MenuNode[] = []
  const windowed: MenuNode[] = []

  const buildNodes = (rows: MenuItemRow[] | undefined): readonly MenuNode[] => {
    if (rows === undefined) return NO_NODES
    const nodes: MenuNode[] = []
    // In place: the sibling arrays were made for this function alone.
    for (const row of rows.sort(compareMenuRows)) {
      if (placed.has(row)) continue
      placed.add(row)
      nodes.push(buildNode(row))
    }
    return Object.freeze(nodes)
  }

  const buildNode = (row: MenuItemRow): MenuNode => {
    const grants = grantsByItemId.get(row.id) ?? NO_GRANTS
    for (const role of grants) grantedRoles.add(role)
    const children = buildNodes(childRowsByParentId.get(row.id))
    const { json: openJson, labelStart, labelEnd } = renderItemOpenJson(row)
    const labels = labelsByItemId.get(row.id)
    // Sorted by tag, so that the order rows were read in never shows (in the version, say).
    const localizedLabels =
      labels === undefined ? null : Object.freeze(sortedEntries(labels).flat())
    const node: MenuNode = Object.freeze({
      itemKey: row.itemKey,
      position: row.position,
      hasHref: row.href !== null,
      grants,
      rolloutPercent: row.rolloutPercent,
      visibleFrom: row.visibleFrom,
      visibleUntil: row.visibleUntil,
      children,
      openJson,
      labelStart,
      labelEnd,
      localizedLabels,
    })
    if (node.rolloutPercent !== null) rollouts.push(node)
    if (node.visibleFrom !== null || node.visibleUntil !== null) windowed.push(node)
    return node
  }

  const roots = new Map<Zone, readonly MenuNode[]>()
  for (const [zone, rows] of rootRows) roots.set(zone, buildNodes(rows))
  rollouts.sort((a, b) => compareCodeUnits(a.itemKey, b.itemKey))
  return { roots, grantedRoles, rollouts, windowed }
}

/** Display order: position, then id as a number (ids are bigint decimal strings). */
export function compareMenuRows(a: MenuItemRow, b: MenuItemRow): number {
  return a.position - b.position || compareDecimalIds(a.id, b.id)
}

function compareDecimalIds(a: string, b: string): number {
  // Identity columns never have leading zeros, so a longer id is a larger one.
  if (a.length !== b.length) return a.length - b.length
  return compareCodeUnits(a, b)
}
