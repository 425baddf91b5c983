import { assembleSnapshot } from '../snapshot/build.js'
import type { Snapshot } from '../snapshot/types.js'

/** Timers cannot wait longer (24.8 days); a window boundary further ahead is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1

export interface WindowTimer {
  /** Set for the next instant an item's window in `snapshot` opens or closes; none: cleared. */
  arm(snapshot: Snapshot): void
  clear(): void
}

/** The feed's **Windows** state (snapshot-feed.ts). */
export function createWindowTimer(options: {
  current: () => Snapshot | undefined
  swap: (next: Snapshot) => void
}): WindowTimer {
  let timer: NodeJS.Timeout | undefined

  function arm(snapshot: Snapshot): void {
    clearTimeout(timer)
    const at = snapshot.nextChangeAt
    if (at === null) return
    timer = setTimeout(applyWindows, Math.min(Math.max(at - Date.now(), 0), MAX_TIMER_MS))
  }

  function applyWindows(): void {
    const current = options.current()
    if (current === undefined) return
    // A boundary further than one timer can wait: wait again.
    if ((current.nextChangeAt ?? Number.POSITIVE_INFINITY) > Date.now()) arm(current)
    else options.swap(assembleSnapshot([], { previous: current }))
  }

  return { arm, clear: () => clearTimeout(timer) }
}
