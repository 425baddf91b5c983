import { ZONES, type Zone } from '../domain/vocabulary.js'
import {
  type Describers,
  describeEntryChanges,
  describeFieldChanges,
  describeFields,
  describeLabels,
  describeRoles,
  describeText,
} from './describe-values.js'
import type { AppDefinition, ItemDefinition } from './types.js'

/** Where an item is: what the database stores beside its own fields. */
interface PlacedItem {
  readonly item: ItemDefinition
  readonly zone: Zone
  /** The parent's id; null at the top of the zone. */
  readonly parent: string | null
  readonly position: number
}

/** Every item field but the id (its identity), children and labels (compared apart). */
const ITEM_FIELDS: Describers<Omit<ItemDefinition, 'id' | 'children' | 'labels'>> = {
  kind: (kind) => kind,
  label: describeText,
  icon: describeText,
  href: describeText,
  external: String,
  roles: describeRoles,
  rollout: (percent) => (percent === null ? 'everyone' : `${percent} %`),
  visibleFrom: (instant) => instant ?? 'unbounded',
  visibleUntil: (instant) => instant ?? 'unbounded',
}

/** What a new item's line leaves out; its label and roles (even "everyone") are always said. */
const ITEM_DEFAULTS: Partial<ItemDefinition> = {
  kind: 'link',
  icon: null,
  href: null,
  external: false,
  rollout: null,
  visibleFrom: null,
  visibleUntil: null,
}

/**
 * One line per difference, in menu order, removed items last (docs/operations.md, "The command line"):
 * `+ item id (place): fields`, `~ item id: field old → new`, `- item id (place): label`.
 */
export function diffMenuItems(
  stored: AppDefinition['menus'],
  wanted: AppDefinition['menus'],
): string[] {
  const before = new Map(placeItems(stored).map((placed) => [placed.item.id, placed]))
  const after = placeItems(wanted)
  const reordered = findReorderedItems(before, after)
  const lines: string[] = []
  for (const placed of after) {
    const { id } = placed.item
    const previous = before.get(id)
    if (previous === undefined) {
      lines.push(`+ item ${id} (${describePlace(placed)}): ${describeNewItem(placed.item)}`)
      continue
    }
    for (const change of describeItemChanges(previous, placed, reordered.has(id)))
      lines.push(`~ item ${id}: ${change}`)
  }
  const kept = new Set(after.map((placed) => placed.item.id))
  for (const placed of before.values()) {
    if (kept.has(placed.item.id)) continue
    lines.push(
      `- item ${placed.item.id} (${describePlace(placed)}): label ${describeText(placed.item.label)}`,
    )
  }
  return lines
}

function placeItems(menus: AppDefinition['menus']): PlacedItem[] {
  const placed: PlacedItem[] = []
  const walk = (zone: Zone, items: readonly ItemDefinition[], parent: string | null) => {
    items.forEach((item, position) => {
      placed.push({ item, zone, parent, position })
      walk(zone, item.children, item.id)
    })
  }
  for (const zone of ZONES) walk(zone, menus[zone], null)
  return placed
}

/** The list an item is in: its parent's children, or the top of its zone. */
function siblingListOf(placed: PlacedItem): string {
  return placed.parent === null ? `top of ${placed.zone}` : `under ${placed.parent}`
}

function describePlace(placed: PlacedItem): string {
  const level = placed.parent === null ? 'top level' : `under ${placed.parent}`
  return `${placed.zone}, ${level}, position ${placed.position}`
}

function describeNewItem(item: ItemDefinition): string {
  const fields = describeFields(ITEM_FIELDS, item, ITEM_DEFAULTS)
  if (Object.keys(item.labels).length > 0) fields.push(`labels ${describeLabels(item.labels)}`)
  return fields.join(', ')
}

/** Where it is, then its fields; a position only when reordered (docs/operations.md, "The command line"). */
function describeItemChanges(
  previous: PlacedItem,
  placed: PlacedItem,
  reordered: boolean,
): string[] {
  const changes: string[] = []
  if (previous.zone !== placed.zone) changes.push(`zone ${previous.zone} → ${placed.zone}`)
  if (previous.parent !== placed.parent) {
    changes.push(`parent ${previous.parent ?? '(top level)'} → ${placed.parent ?? '(top level)'}`)
  }
  const moved =
    siblingListOf(previous) === siblingListOf(placed)
      ? reordered
      : previous.position !== placed.position
  if (moved) changes.push(`position ${previous.position} → ${placed.position}`)
  changes.push(...describeFieldChanges(ITEM_FIELDS, previous.item, placed.item))
  const labelChanges = describeEntryChanges(previous.item.labels, placed.item.labels, (tag) => tag)
  if (labelChanges.length > 0) changes.push(`labels ${labelChanges.join(', ')}`)
  return changes
}

/** Ids of items whose order among the siblings they keep changed: all but a longest ordered run. */
function findReorderedItems(
  before: ReadonlyMap<string, PlacedItem>,
  after: readonly PlacedItem[],
): Set<string> {
  const keptByList = new Map<string, { previous: PlacedItem; placed: PlacedItem }[]>()
  for (const placed of after) {
    const previous = before.get(placed.item.id)
    const siblings = siblingListOf(placed)
    if (previous === undefined || siblingListOf(previous) !== siblings) continue
    keptByList.set(siblings, [...(keptByList.get(siblings) ?? []), { previous, placed }])
  }
  const reordered = new Set<string>()
  for (const list of keptByList.values()) {
    const inOrder = findItemsInOrder(
      list.map(({ previous, placed }) => [previous.position, placed.position]),
    )
    list.forEach(({ placed }, index) => {
      if (!inOrder.has(index)) reordered.add(placed.item.id)
    })
  }
  return reordered
}

/** The run ending at an index: its length, how many of it keep their index, the index before. */
type Run = { length: number; kept: number; previous: number }

/**
 * Given [old, new] positions in new order, the indexes of a longest run whose old positions
 * increase; among runs as long, the one keeping most items at their old index (reversing three
 * items moves the outer two, not the middle one from 1 to 1). Quadratic: lists are a screen long.
 */
function findItemsInOrder(positions: readonly (readonly [number, number])[]): Set<number> {
  const runs: Run[] = []
  positions.forEach(([old, now], i) => {
    const own = old === now ? 1 : 0
    let best = { length: 1, kept: own, previous: -1 }
    for (let j = 0; j < i; j++) {
      const run = runs[j]
      const before = positions[j]
      if (run === undefined || before === undefined || before[0] >= old) continue
      const candidate = { length: run.length + 1, kept: run.kept + own, previous: j }
      if (isLongerRun(candidate, best)) best = candidate
    }
    runs.push(best)
  })
  let end = -1
  runs.forEach((run, i) => {
    const current = runs[end]
    if (current === undefined || isLongerRun(run, current)) end = i
  })
  const inOrder = new Set<number>()
  for (let i = end; i !== -1; i = runs[i]?.previous ?? -1) inOrder.add(i)
  return inOrder
}

function isLongerRun(run: Run, other: Run): boolean {
  return run.length > other.length || (run.length === other.length && run.kept > other.kept)
}
