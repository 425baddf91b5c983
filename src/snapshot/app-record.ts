import type { LabelRow, MenuItemRow } from '../db/snapshot-rows.js'
import { compareCodeUnits, ZONES, type Zone } from '../domain/vocabulary.js'
import { encodeAppContent, encodeItem, type ItemTuple } from './app-content.js'
import type { AppRows } from './app-rows.js'
import { contentTag } from './content-tag.js'
import { renderAppJson, renderInventoryEntryJson } from './render.js'

/** One app in a snapshot: its content's bytes (off V8's heap), what is known without its view. */
export interface AppRecord {
  readonly appKey: string
  /** The revision its rows were read at; null for an app written around the triggers. */
  readonly revision: string | null
  /** The content's tag: the app's share of the snapshot version. */
  readonly hash: string
  /** Names the content in the caches, which outlive snapshots (app-views.ts, `viewKey`). */
  readonly contentKey: string
  readonly content: Buffer
  /** Its entry of `GET /api/v1/apps`. */
  readonly inventoryJson: string
  /** Every role granted on one of its items, sorted: the preview's role picker. */
  readonly grantedRoles: readonly string[]
  /** Its items with a window, which time alone shows or hides; empty for most apps. */
  readonly windows: readonly ItemWindow[]
}

type ItemWindow = Pick<MenuItemRow, 'itemKey' | 'visibleFrom' | 'visibleUntil'>

/**
 * One app's record from its rows. The record `held` of the same content is kept, at the new
 * revision: a reload that reads every app holds no second copy of their bytes.
 */
export function recordApp(rows: AppRows, held?: AppRecord): AppRecord {
  const { app } = rows
  const items: ItemTuple[] = []
  const roles = new Set<string>()
  const windows: ItemWindow[] = []
  const labelLocales: string[] = []
  forEachItemInOrder(rows, (row, parent) => {
    const granted = rows.grantsByItemId.get(row.id) ?? NONE
    const labels = flattenLabels(rows.labelsByItemId.get(row.id))
    items.push(encodeItem(row, parent, granted, labels))
    for (const role of granted) roles.add(role)
    for (let index = 0; index < labels.length; index += 2)
      labelLocales.push(labels[index] as string)
    const { itemKey, visibleFrom, visibleUntil } = row
    if (visibleFrom !== null || visibleUntil !== null)
      windows.push({ itemKey, visibleFrom, visibleUntil })
  })
  const json = encodeAppContent(app, rows.branding, items)
  const hash = contentTag(json)
  if (held?.hash === hash) {
    return held.revision === app.revision
      ? held
      : Object.freeze({ ...held, revision: app.revision })
  }
  const content = Buffer.from(json)
  const locales = [...localesByLowercase(app.defaultLocale, labelLocales).values()]
  return Object.freeze({
    appKey: app.appKey,
    revision: app.revision,
    hash,
    contentKey: contentKeyOf(app.appKey, hash),
    content,
    inventoryJson: renderInventoryEntryJson(
      renderAppJson(app),
      app.defaultLocale,
      locales.sort(compareCodeUnits),
    ),
    grantedRoles: Object.freeze([...roles].sort(compareCodeUnits)),
    windows: windows.length === 0 ? NONE : Object.freeze(windows),
  })
}

/** App keys match ^[a-z0-9][a-z0-9-]*$ and hashes are base64url: "\0" keeps them apart. */
export function contentKeyOf(appKey: string, hash: string): string {
  return `${appKey}\0${hash}\0`
}

/**
 * The app's locales (the default, every label's) by lowercased tag. A language spelled two ways
 * (`de-CH`, `de-ch`) counts once, as the first in code-unit order, so every instance agrees.
 */
export function localesByLowercase(
  defaultLocale: string,
  labelLocales: Iterable<string>,
): Map<string, string> {
  const defaultLowercase = defaultLocale.toLowerCase()
  const byLowercase = new Map<string, string>([[defaultLowercase, defaultLocale]])
  for (const locale of labelLocales) {
    const lowercase = locale.toLowerCase()
    if (lowercase === defaultLowercase) continue
    const spelled = byLowercase.get(lowercase)
    if (spelled === undefined || locale < spelled) byLowercase.set(lowercase, locale)
  }
  return byLowercase
}

/**
 * Calls `visit` with each item a root leads to, after its parent (with its parent's index; -1 for
 * a root), siblings in display order. Items no root leads to (a parent missing, in another zone,
 * in a cycle) are left out, not rejected: the database forbids them; a reload must not fail.
 */
function forEachItemInOrder(
  { items }: AppRows,
  visit: (row: MenuItemRow, parent: number) => void,
): void {
  const byId = new Map<string, MenuItemRow>()
  for (const item of items) byId.set(item.id, item)
  const roots = new Map<Zone, MenuItemRow[]>(ZONES.map((zone) => [zone, []]))
  const childrenById = new Map<string, MenuItemRow[]>()
  for (const item of items) {
    if (item.parentId === null) {
      roots.get(item.zone)?.push(item)
      continue
    }
    const parent = byId.get(item.parentId)
    if (parent === undefined || parent.zone !== item.zone) continue
    const siblings = childrenById.get(parent.id)
    if (siblings === undefined) childrenById.set(parent.id, [item])
    else siblings.push(item)
  }
  // Each row is placed once, even if duplicate ids would lead to it twice.
  const placed = new Set<MenuItemRow>()
  let visited = 0
  const place = (rows: MenuItemRow[] | undefined, parent: number): void => {
    if (rows === undefined) return
    for (const row of rows.sort(compareMenuRows)) {
      if (placed.has(row)) continue
      placed.add(row)
      const index = visited
      visited += 1
      visit(row, parent)
      place(childrenById.get(row.id), index)
    }
  }
  for (const zone of ZONES) place(roots.get(zone), -1)
}

const NONE: readonly never[] = Object.freeze([])

/** An item's labels flat (locale, label, …), sorted by locale: row order never shows. */
function flattenLabels(labels: readonly LabelRow[] | undefined): readonly string[] {
  if (labels === undefined) return NONE
  const sorted =
    labels.length > 1 ? [...labels].sort((a, b) => compareCodeUnits(a.locale, b.locale)) : labels
  const flat: string[] = []
  for (const { locale, label } of sorted) flat.push(locale, label)
  return flat
}

/** Display order: position, then id as a number (ids are bigint decimal strings). */
function compareMenuRows(a: MenuItemRow, b: MenuItemRow): number {
  return a.position - b.position || compareDecimalIds(a.id, b.id)
}

function compareDecimalIds(a: string, b: string): number {
  // Identity columns never have leading zeros, so a longer id is a larger one.
  if (a.length !== b.length) return a.length - b.length
  return compareCodeUnits(a, b)
}
