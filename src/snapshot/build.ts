import type { SnapshotRead, SnapshotRows } from '../db/read-snapshot-rows.js'
import { compareCodeUnits } from '../domain/vocabulary.js'
import { type BuiltApp, buildApp, groupRowsByApp, viewAt } from './build-app.js'
import { renderAppsInventory } from './render.js'
import type { Snapshot } from './types.js'
import { createVariantCache, type VariantCache } from './variant-cache.js'
import { computeSnapshotVersion } from './version.js'

export interface BuildSnapshotOptions {
  /** When the rows were read; defaults to now. */
  readonly loadedAt?: Date
  /** The snapshot in service: its apps (and memoized variants) are kept where nothing moved. */
  readonly previous?: Snapshot
  /** The variant cache of a first build (tests set its bounds); later builds take the previous one's. */
  readonly variants?: VariantCache
  /** False: the rows hold only apps changed since `previous` (the rest are kept). Default true. */
  readonly complete?: boolean
  /** Apps deleted since `previous` (incremental reads). */
  readonly removedApps?: readonly string[]
  /**
   * The time the views are made for, in ms since the epoch (default now). An incremental build
   * also makes again the views of apps a window boundary has passed in since.
   */
  readonly now?: number
}

interface SnapshotInternals {
  readonly apps: ReadonlyMap<string, BuiltApp>
  readonly variants: VariantCache
  /** Each app with a window boundary ahead, and the next one: all that time can change. */
  readonly timedApps: ReadonlyMap<string, number>
}

/** Keeps a snapshot's internals off its public face: only the next build and the feed read them. */
const INTERNALS = Symbol('snapshot internals')

interface BuiltSnapshot extends Snapshot {
  readonly [INTERNALS]: SnapshotInternals
}

function internalsOf(snapshot: Snapshot): SnapshotInternals | undefined {
  return (snapshot as Partial<BuiltSnapshot>)[INTERNALS]
}

/**
 * Turns a read of the database into an immutable snapshot; variants are rendered on demand.
 * Given the snapshot in service, a build costs what changed: unmoved apps are taken over whole
 * (views, memoized variants and event streams stay), an app rebuilt to the same content keeps
 * its view, and when nothing changed the snapshot in service itself is returned. Rows the
 * database's constraints forbid (orphans, cycles) are left out instead of failing.
 */
export function buildSnapshot(rows: SnapshotRows, options: BuildSnapshotOptions = {}): Snapshot {
  const now = options.now ?? Date.now()
  const previousSnapshot = options.previous
  const previous = previousSnapshot === undefined ? undefined : internalsOf(previousSnapshot)
  const complete = options.complete ?? true
  const apps = new Map<string, BuiltApp>(complete ? [] : previous?.apps)
  // One cache for the feed's life, made by its first build: kept apps keep warm variants, and
  // keys carry the content hash, so a changed app's old variants are never served.
  const variants = previous?.variants ?? options.variants ?? createVariantCache()

  // The apps whose view may differ from the one in service.
  const touched = new Set<string>(complete ? previous?.apps.keys() : options.removedApps)
  for (const appKey of options.removedApps ?? []) apps.delete(appKey)
  for (const appRows of groupRowsByApp(rows)) {
    const { appKey, revision } = appRows.app
    const before = previous?.apps.get(appKey)
    if (!complete && revision !== null && before?.revision === revision) continue
    const built = buildApp(appRows, variants, now)
    // The same content at the same time read again (after a reconnect, say): the view stays.
    const same = before?.cacheKeyPrefix === built.cacheKeyPrefix
    apps.set(appKey, same ? { ...before, revision } : built)
    touched.add(appKey)
  }
  // Apps a window boundary has passed in since: the same content, a view for the new time.
  for (const [appKey, nextChangeAt] of complete ? [] : (previous?.timedApps ?? [])) {
    const before = apps.get(appKey)
    if (nextChangeAt > now || touched.has(appKey) || before === undefined) continue
    apps.set(appKey, { ...before, ...viewAt(appKey, before, variants, now) })
    touched.add(appKey)
  }

  const changed = [...touched].filter(
    (appKey) => apps.get(appKey)?.view !== previous?.apps.get(appKey)?.view,
  )
  if (previousSnapshot !== undefined && changed.length === 0) return previousSnapshot
  const timedApps = new Map(complete ? [] : previous?.timedApps)
  for (const appKey of changed) {
    const before = previous?.apps.get(appKey)
    // A view no snapshot has any more: no request will ask for its variants again.
    if (before !== undefined) variants.dropPrefix(before.cacheKeyPrefix)
    timedApps.delete(appKey)
  }
  for (const appKey of complete ? apps.keys() : changed) {
    const nextChangeAt = apps.get(appKey)?.nextChangeAt
    if (nextChangeAt !== undefined && nextChangeAt !== null) timedApps.set(appKey, nextChangeAt)
  }

  const sameApps =
    previousSnapshot !== undefined &&
    apps.size === previousSnapshot.appKeys.length &&
    changed.every((appKey) => apps.has(appKey) && previous?.apps.has(appKey))
  const appKeys = sameApps
    ? previousSnapshot.appKeys
    : Object.freeze([...apps.keys()].sort(compareCodeUnits))
  // Most changes are to menus, not to what the inventory lists: its bytes and tag then stay.
  const appsInventory =
    sameApps &&
    changed.every(
      (appKey) => apps.get(appKey)?.inventoryJson === previous?.apps.get(appKey)?.inventoryJson,
    )
      ? previousSnapshot.appsInventory
      : renderAppsInventory(appKeys.map((appKey) => apps.get(appKey)?.inventoryJson ?? ''))
  // Over every app: computed when first asked for (/readyz), not on every reload.
  let version: string | undefined
  const snapshot: BuiltSnapshot = Object.freeze({
    get version() {
      version ??= computeSnapshotVersion(appKeys.map((appKey) => apps.get(appKey)?.hash ?? ''))
      return version
    },
    // A copy, so that the caller's Date object cannot move this snapshot's time.
    loadedAt: new Date((options.loadedAt ?? new Date()).getTime()),
    appKeys,
    appsInventory,
    nextChangeAt: timedApps.size === 0 ? null : Math.min(...timedApps.values()),
    app: (appKey: string) => apps.get(appKey)?.view,
    [INTERNALS]: { apps, variants, timedApps },
  })
  return snapshot
}

/** The snapshot a read of the database gives on top of the one in service. */
export function buildFromRead(read: SnapshotRead, previous: Snapshot | undefined): Snapshot {
  const { complete, removedApps } = read
  return buildSnapshot(read.rows, { complete, removedApps, ...(previous && { previous }) })
}

/** The revision the snapshot's app was read at; undefined when the snapshot has no such app. */
export function revisionInSnapshot(snapshot: Snapshot, appKey: string): string | null | undefined {
  return internalsOf(snapshot)?.apps.get(appKey)?.revision
}
