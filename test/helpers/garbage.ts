import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { SnapshotRows } from '../../src/db/snapshot-rows.js'
import { MAX_VIEWS } from '../../src/snapshot/app-views.js'
import type { Snapshot } from '../../src/snapshot/types.js'
import { appRow, itemRow } from '../snapshot/rows.js'

// The flag makes `gc` a global of contexts created from now on: such a context lends it to us,
// so the tests run without `--expose-gc` on the command line.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/**
 * Collects what nothing holds any more. A WeakRef made or read in the current job keeps its
 * target until the job ends, hence the turn of the event loop first.
 */
export async function collectGarbage(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve))
  gc()
}

/** `crm` and one app more than the view cache holds (`other-0` …), one link each. */
export function moreAppsThanViewsRows(): SnapshotRows {
  const apps = ['crm', ...Array.from({ length: MAX_VIEWS }, (_, index) => `other-${index}`)]
  return {
    apps: apps.map((appKey) => appRow(appKey)),
    branding: [],
    menuItems: apps.map((appKey, index) => itemRow(String(index + 1), 'home', { appKey })),
    grants: [],
    labels: [],
  }
}

/** Asks for every app but `crm`: `crm`'s view, asked for before, leaves the cache. */
export function evictCrmView(snapshot: Snapshot): void {
  for (const appKey of snapshot.appKeys) if (appKey !== 'crm') snapshot.app(appKey)
}
