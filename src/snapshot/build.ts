import { compareCodeUnits } from '../domain/vocabulary.js'
import type { AppRecord } from './app-record.js'
import { type AppViews, createAppViews, nextWindowChange, viewKey } from './app-views.js'
import { contentTag } from './content-tag.js'
import { renderAppsInventory } from './render.js'
import type { Snapshot } from './types.js'
import { createVariantCache, type VariantCache } from './variant-cache.js'

export interface AssembleOptions {
  /** When the data were read from the database; defaults to the previous snapshot's, else now. */
  readonly loadedAt?: Date
  /** The snapshot in service: its records, caches and views are kept where nothing moved. */
  readonly previous?: Snapshot
  /** Apps gone since `previous`. */
  readonly removedApps?: readonly string[]
  /** The time the views are made for, in ms since the epoch (default now). */
  readonly now?: number
  /** The variant cache of a first build (tests set its bounds); later builds keep it. */
  readonly variants?: VariantCache
  /** The dataset the records' revisions are of (sql/007_dataset.sql); default: previous's. */
  readonly dataset?: string
  /** The server history the records were read from (db/server-history.ts); default: previous's. */
  readonly history?: string
  /** A new snapshot even when nothing changed: its data were read again (`loadedAt`). */
  readonly renew?: boolean
}

interface SnapshotInternals {
  readonly records: ReadonlyMap<string, AppRecord>
  readonly variants: VariantCache
  readonly views: AppViews
  /** The view key of each app with windows; the others' is their content key. */
  readonly timedViewKeys: ReadonlyMap<string, string>
  readonly dataset: string | undefined
  readonly history: string | undefined
}

/** Keeps a snapshot's internals off its public face: only builds, the feed and its file read them. */
const internals = new WeakMap<Snapshot, SnapshotInternals>()

/**
 * Puts records read on top of the snapshot in service, at the cost of what changed: the same
 * content keeps its views and variants; when nothing changed at all, `previous` is returned.
 */
export function assembleSnapshot(
  read: readonly AppRecord[],
  options: AssembleOptions = {},
): Snapshot {
  const now = options.now ?? Date.now()
  const previousSnapshot = options.previous
  const previous = previousSnapshot && internals.get(previousSnapshot)
  // One cache of each for the feed's life, made by its first build: keys carry the content's
  // hash, so a changed app's old views and variants are never served.
  const variants = previous?.variants ?? options.variants ?? createVariantCache()
  const views = previous?.views ?? createAppViews(variants)

  const records = new Map(previous?.records)
  let recordsMoved = false
  for (const appKey of options.removedApps ?? [])
    recordsMoved = records.delete(appKey) || recordsMoved
  for (const record of read) {
    const before = records.get(record.appKey)
    if (before?.hash === record.hash && before.revision === record.revision) continue
    const kept =
      before?.hash === record.hash && Object.freeze({ ...before, revision: record.revision })
    records.set(record.appKey, kept || record)
    recordsMoved = true
  }

  const timedViewKeys = new Map<string, string>()
  let nextChangeAt: number | null = null
  // Every app with windows: the previous snapshot's that are still there, and the read's.
  const candidates = [...(previous?.timedViewKeys.keys() ?? []), ...read.map((r) => r.appKey)]
  for (const appKey of new Set(candidates)) {
    const record = records.get(appKey)
    if (record === undefined || record.windows.length === 0) continue
    timedViewKeys.set(appKey, viewKey(record, now))
    const next = nextWindowChange(record, now)
    if (next !== null && (nextChangeAt === null || next < nextChangeAt)) nextChangeAt = next
  }
  const keyOf = (keys: ReadonlyMap<string, string>, record: AppRecord | undefined) =>
    record === undefined ? undefined : (keys.get(record.appKey) ?? record.contentKey)
  const viewMoved = (appKey: string) =>
    keyOf(timedViewKeys, records.get(appKey)) !==
    (previous && keyOf(previous.timedViewKeys, previous.records.get(appKey)))
  const moved = new Set([
    ...(options.removedApps ?? []),
    ...read.map((record) => record.appKey),
    ...timedViewKeys.keys(),
    ...(previous?.timedViewKeys.keys() ?? []),
  ])
  const changed = [...moved].filter(viewMoved)
  const dataset = options.dataset ?? previous?.dataset
  const history = options.history ?? previous?.history
  const unchanged =
    changed.length === 0 &&
    !recordsMoved &&
    dataset === previous?.dataset &&
    history === previous?.history
  if (previousSnapshot !== undefined && unchanged && options.renew !== true) return previousSnapshot
  for (const appKey of changed) {
    const before = previous && keyOf(previous.timedViewKeys, previous.records.get(appKey))
    if (before !== undefined) views.drop(before)
  }

  const sameApps =
    previousSnapshot !== undefined &&
    records.size === previousSnapshot.appKeys.length &&
    changed.every((appKey) => records.has(appKey) && previous?.records.has(appKey))
  const appKeys = sameApps
    ? previousSnapshot.appKeys
    : Object.freeze([...records.keys()].sort(compareCodeUnits))
  // Most changes are to menus, not to what the inventory lists: its bytes and tag then stay.
  const appsInventory =
    sameApps &&
    read.every(
      (record) => record.inventoryJson === previous?.records.get(record.appKey)?.inventoryJson,
    )
      ? previousSnapshot.appsInventory
      : renderAppsInventory(appKeys.map((appKey) => records.get(appKey)?.inventoryJson ?? ''))
  // Over every app: computed when first asked for (/readyz), not on every reload. Each app's
  // hash is its content's tag (app-content.ts): row ids, row order and load time never change it.
  let version: string | undefined
  const snapshot: Snapshot = Object.freeze({
    get version() {
      version ??= contentTag(appKeys.map((appKey) => records.get(appKey)?.hash ?? '').join(','))
      return version
    },
    // A copy, so that the caller's Date object cannot move this snapshot's time.
    loadedAt: new Date((options.loadedAt ?? previousSnapshot?.loadedAt ?? new Date()).getTime()),
    appKeys,
    appsInventory,
    nextChangeAt,
    app(appKey: string) {
      const record = records.get(appKey)
      return record && views.viewOf(record, timedViewKeys.get(appKey) ?? record.contentKey, now)
    },
    grantedRoles: (appKey: string) => records.get(appKey)?.grantedRoles,
    viewKey: (appKey: string) => keyOf(timedViewKeys, records.get(appKey)),
  })
  internals.set(snapshot, { records, variants, views, timedViewKeys, dataset, history })
  return snapshot
}

/** The revision the snapshot's app was read at; undefined when the snapshot has no such app. */
export function revisionInSnapshot(snapshot: Snapshot, appKey: string): string | null | undefined {
  return internals.get(snapshot)?.records.get(appKey)?.revision
}

/** The dataset the snapshot's revisions are of; undefined when not read from a database. */
export function datasetOf(snapshot: Snapshot): string | undefined {
  return internals.get(snapshot)?.dataset
}

/** The server history the snapshot was read from (db/server-history.ts); undefined: not known. */
export function historyOf(snapshot: Snapshot): string | undefined {
  return internals.get(snapshot)?.history
}

/** Every app's record, for the snapshot's file. */
export function recordsOf(snapshot: Snapshot): ReadonlyMap<string, AppRecord> {
  return internals.get(snapshot)?.records ?? new Map()
}
