import { compareCodeUnits, ZONES, type Zone } from '../domain/vocabulary.js'
import type { ContentItem } from './app-content.js'
import { renderItemOpenJson } from './render.js'
import type { MenuNode } from './types.js'

export interface MenuTrees {
  readonly roots: ReadonlyMap<Zone, readonly MenuNode[]>
  /** Roles granted on the items: the only roles that can change what a caller sees. */
  readonly grantedRoles: ReadonlySet<string>
  /** Items with a rollout, by item key: the only ones whose buckets can change it. */
  readonly rollouts: readonly MenuNode[]
  /** Items with a window: the only ones that time can show or hide. */
  readonly windowed: readonly MenuNode[]
}

const NO_NODES: readonly MenuNode[] = Object.freeze([])

/** The zone trees of an app's items, which come in display order, each after its parent. */
export function buildMenuTrees(items: readonly ContentItem[], defaultLocale: string): MenuTrees {
  const childIndexes: number[][] = items.map(() => [])
  const rootIndexes = new Map<Zone, number[]>(ZONES.map((zone) => [zone, []]))
  items.forEach((item, index) => {
    if (item.parent === -1) rootIndexes.get(item.zone)?.push(index)
    else childIndexes[item.parent]?.push(index)
  })

  const defaultLowercase = defaultLocale.toLowerCase()
  const grantedRoles = new Set<string>()
  const rollouts: MenuNode[] = []
  const windowed: MenuNode[] = []

  const buildNodes = (indexes: readonly number[] | undefined): readonly MenuNode[] =>
    indexes === undefined || indexes.length === 0
      ? NO_NODES
      : Object.freeze(indexes.map((index) => buildNode(items[index] as ContentItem, index)))

  const buildNode = (item: ContentItem, index: number): MenuNode => {
    for (const role of item.roles) grantedRoles.add(role)
    const { openJson, labelStart, labelEnd } = renderItemOpenJson(item)
    const node: MenuNode = Object.freeze({
      itemKey: item.itemKey,
      hasHref: item.href !== null,
      grants: item.roles,
      rolloutPercent: item.rolloutPercent,
      visibleFrom: item.visibleFrom,
      visibleUntil: item.visibleUntil,
      children: buildNodes(childIndexes[index]),
      openJson,
      labelStart,
      labelEnd,
      localizedLabels: localizeLabels(item.labels, defaultLowercase),
    })
    if (node.rolloutPercent !== null) rollouts.push(node)
    if (node.visibleFrom !== null || node.visibleUntil !== null) windowed.push(node)
    return node
  }

  const roots = new Map<Zone, readonly MenuNode[]>()
  for (const [zone, indexes] of rootIndexes) roots.set(zone, buildNodes(indexes))
  rollouts.sort((a, b) => compareCodeUnits(a.itemKey, b.itemKey))
  return { roots, grantedRoles, rollouts, windowed }
}

/**
 * The item's labels by lowercased tag, flat and sorted; null when none. The default locale's is
 * `menu_items.label`; of two spellings of one language the later in code-unit order wins.
 */
function localizeLabels(
  labels: readonly string[],
  defaultLowercase: string,
): readonly string[] | null {
  const byLowercase = new Map<string, string>()
  for (let index = 0; index < labels.length; index += 2) {
    const lowercase = (labels[index] as string).toLowerCase()
    if (lowercase !== defaultLowercase) byLowercase.set(lowercase, labels[index + 1] as string)
  }
  if (byLowercase.size === 0) return null
  const sorted = [...byLowercase].sort(([a], [b]) => compareCodeUnits(a, b))
  return Object.freeze(sorted.flat())
}
