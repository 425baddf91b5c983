/**
 * Whether API work waits in a standing queue: CoDel's rule (Nichols and Jacobson, "Controlling
 * Queue Delay"), as Facebook's "Fail at Scale" applies it to servers, with the event loop as the
 * queue. A request waits while the turn of the loop before it runs, so a turn's length is how
 * long the requests met in it waited. A burst makes a few long turns and drains; a standing
 * queue makes every turn long. So the excess is shed only once no turn has been short for a
 * whole interval, and then only the requests met late in their turn: each turn still serves
 * its first TARGET_MS of work, and the first short turn (the queue drained) ends the shedding.
 * docs/operations.md, "Under overload".
 */
export interface StandingQueue {
  /** A turn of the event loop that did API work ran from `startMs` to `endMs`. */
  recordTurn(startMs: number, endMs: number): void
  /** Whether to shed a request met `waitedMs` into its turn, at `nowMs`. */
  shouldShed(waitedMs: number, nowMs: number): boolean
  /** Whether, at `nowMs`, no turn has been short for an interval. */
  isStanding(nowMs: number): boolean
}

/**
 * A turn longer than this is a queue: a full load of 50 connections runs turns of 2 to 5 ms, and
 * nothing the service does blocks the loop longer than 50 ms (CONTRACT "At scale"). While
 * shedding, a request met this far into its turn is shed, so a turn serves at most this much
 * work before it answers the rest with 503: probes on another socket wait about one such turn.
 */
const TARGET_MS = 50
/**
 * How long every turn must stay long before anything is shed: a burst that the instance answers
 * within a second is answered in full (CONTRACT "Under overload"), a queue that stands longer is
 * not a burst.
 */
const INTERVAL_MS = 1_000

export function createStandingQueue(): StandingQueue {
  /** When the queue was last seen empty: a short turn, or the loop free between two turns. */
  let drainedAtMs: number | undefined
  let lastEndMs: number | undefined

  const isStanding = (nowMs: number) =>
    drainedAtMs !== undefined && nowMs - drainedAtMs > INTERVAL_MS

  return {
    recordTurn(startMs, endMs) {
      // No API work for a while before this turn: nothing was waiting.
      if (lastEndMs === undefined || startMs - lastEndMs >= TARGET_MS) drainedAtMs = startMs
      if (endMs - startMs < TARGET_MS) drainedAtMs = endMs
      lastEndMs = endMs
    },
    shouldShed: (waitedMs, nowMs) => waitedMs > TARGET_MS && isStanding(nowMs),
    isStanding,
  }
}
