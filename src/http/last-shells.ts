import type { Caller } from '../snapshot/caller.js'
import type { AppView, SnapshotSource } from '../snapshot/types.js'
import type { Coding } from './accept-encoding.js'
import type { Representation } from './representation.js'

interface LastShell {
  /** The view's key, not the view: a view the cache let go must not stay alive here. */
  readonly viewKey: string
  readonly locale: string
  readonly coding: Coding
  readonly representation: Representation
}

export interface LastShells {
  /** The caller's shell: the one it was last sent when it asks for the same again, else `make`'s. */
  representationOf(
    caller: Caller,
    view: AppView,
    locale: string,
    coding: Coding,
    make: () => Representation,
  ): Representation
}

/**
 * Most requests are a cached token asking again what it asked last: answered here, about a fifth
 * less CPU per warm response (bench/README.md, "The last shell per caller"). Held weakly by
 * caller, so an entry leaves with its token; dropped whole on a new snapshot.
 */
export function createLastShells(snapshots: Pick<SnapshotSource, 'onSwap'>): LastShells {
  let lastShells = new WeakMap<Caller, LastShell>()
  snapshots.onSwap(() => {
    lastShells = new WeakMap()
  })
  return {
    representationOf(caller, view, locale, coding, make) {
      const last = lastShells.get(caller)
      if (last?.viewKey === view.viewKey && last.locale === locale && last.coding === coding) {
        return last.representation
      }
      const representation = make()
      lastShells.set(caller, { viewKey: view.viewKey, locale, coding, representation })
      return representation
    },
  }
}
