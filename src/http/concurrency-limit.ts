/**
 * How many API requests the instance takes at once: a limit that follows what it can do, in the
 * manner of Netflix's concurrency-limits (Gradient2) and Envoy's adaptive concurrency filter, but
 * measured on the event loop. libuv accepts one connection per turn of the loop, and a probe is
 * answered the turn after its connection is taken, so what must stay short is the turn. Each
 * window compares the turns that did API work with their budget: while they stay within it, a
 * limit that turned requests away grows; when they pass it two windows running, it shrinks in
 * proportion.
 * docs/operations.md, "Under overload".
 */
export interface ConcurrencyLimit {
  /** Takes a slot when one is free, at `nowMs`; false: the instance is at its limit. */
  tryAcquire(nowMs: number): boolean
  release(): void
  /**
   * A turn of the event loop that admitted, shed or answered API requests, or accepted a
   * connection, took `durationMs`; `accepted`: it accepted a connection.
   */
  recordTurn(turn: { readonly durationMs: number; readonly accepted: boolean }, nowMs: number): void
  /** The current limit, whole. */
  readonly limit: number
  readonly inFlight: number
}

export interface ConcurrencyLimitOptions {
  /** The limit at start (before any measurement). */
  readonly initial?: number
  readonly min?: number
  readonly max?: number
}

/**
 * A turn's budget: a probe's connection is accepted within a turn and the probe answered in the
 * next, and an admitted request within a few: 20 ms keeps both far inside the probes' 1 s and
 * above the 2 to 5 ms turns of a full load of 50 connections, which needs no shedding.
 */
const TURN_BUDGET_MS = 20
/**
 * While connections wait to be accepted (most turns accept one, for ACCEPTING_WINDOWS windows
 * running), 1 ms: 2,000 connections opened at once are taken in about two seconds. A count of
 * accepts would not do: the longer the turns, the fewer a window holds.
 */
const ACCEPTING_TURN_BUDGET_MS = 1
const ACCEPTING_SHARE = 0.5
/**
 * Two windows running, though a pool of 50 connections opened at once may look like a backlog
 * for a moment: waiting for a third lets a storm's first windows, under the 20 ms budget, raise
 * the limit and slow the accepts that follow.
 */
const ACCEPTING_WINDOWS = 2
/** Before anything is measured: a full load of 50 connections (bench/README.md, "Overload"). */
const INITIAL_LIMIT = 50
/** Never fewer: the thread pool's four threads verify signatures side by side. */
const MIN_LIMIT = 4
/** Past this many requests at once, no instance on a few cores answers any faster. */
const MAX_LIMIT = 1_000
/**
 * A limit brought down by an overload stays down while nothing comes to raise it: after a second
 * without a turn, the next burst starts from the initial limit again, not from the overload's.
 */
const QUIET_MS = 1_000
/** A window ends after this long with at least MIN_TURNS turns (else when it has them). */
const WINDOW_MS = 100
const MIN_TURNS = 5
/**
 * Per window the limit moves in proportion to how far the turns are from their budget, by half
 * at most (a slow window, a GC pause, costs little) and by double at most.
 */
const MIN_GRADIENT = 0.5
const MAX_GRADIENT = 2
/** Growth moves the limit this share of the way to where the turns point: room is a guess. */
const GROWTH_SMOOTHING = 0.5

export function createAdaptiveConcurrencyLimit(
  options: ConcurrencyLimitOptions = {},
): ConcurrencyLimit {
  const min = options.min ?? MIN_LIMIT
  const max = options.max ?? MAX_LIMIT
  const initial = clamp(options.initial ?? INITIAL_LIMIT, min, max)
  let limit = initial
  let inFlight = 0
  let windowStartMs: number | undefined
  let lastSeenMs = Number.NEGATIVE_INFINITY
  let turnsMs: number[] = []
  let acceptingTurns = 0
  let acceptingWindows = 0
  let previousOverBudget = false
  let admitted = 0
  let shed = 0

  function noteActivity(nowMs: number): void {
    if (nowMs - lastSeenMs > QUIET_MS) {
      limit = Math.max(limit, initial)
      windowStartMs = undefined
      turnsMs = []
      acceptingTurns = 0
      acceptingWindows = 0
      previousOverBudget = false
      admitted = 0
      shed = 0
    }
    lastSeenMs = nowMs
  }

  function endWindow(): void {
    acceptingWindows = acceptingTurns >= ACCEPTING_SHARE * turnsMs.length ? acceptingWindows + 1 : 0
    const budgetMs =
      acceptingWindows >= ACCEPTING_WINDOWS ? ACCEPTING_TURN_BUDGET_MS : TURN_BUDGET_MS
    // The median: a turn that met a garbage collection says nothing of the load.
    const typicalMs = turnsMs.sort((a, b) => a - b)[Math.floor(turnsMs.length / 2)] as number
    const ratio = budgetMs / typicalMs
    // One window past the budget is a disturbance (a collection, a neighbour on the core): a
    // shrunk limit would shed, and the clients it sheds stay away for seconds. Two are a load.
    const overBudget = ratio < 1 && (previousOverBudget || acceptingWindows >= ACCEPTING_WINDOWS)
    previousOverBudget = ratio < 1
    // Turns spent mostly on answers the limit refused (clients back at once, not waiting their
    // Retry-After) would not shorten with a lower limit, which would only serve fewer.
    const gradient = clamp(
      shed > admitted || (ratio < 1 && !overBudget) ? Math.max(1, ratio) : ratio,
      MIN_GRADIENT,
      MAX_GRADIENT,
    )
    // Room to grow only when the limit turned requests away: a limit nobody reaches proves nothing.
    const target = gradient > 1 && shed === 0 ? limit : limit * gradient
    // Down at once, as far as the turns say; up a share of the way.
    limit = clamp(target < limit ? target : limit + GROWTH_SMOOTHING * (target - limit), min, max)
    turnsMs = []
    acceptingTurns = 0
    admitted = 0
    shed = 0
  }

  return {
    tryAcquire(nowMs) {
      noteActivity(nowMs)
      if (inFlight >= Math.floor(limit)) {
        shed += 1
        return false
      }
      inFlight += 1
      admitted += 1
      return true
    },

    release() {
      inFlight -= 1
    },

    recordTurn(turn, nowMs) {
      noteActivity(nowMs)
      windowStartMs ??= nowMs
      turnsMs.push(turn.durationMs)
      if (turn.accepted) acceptingTurns += 1
      if (nowMs - windowStartMs >= WINDOW_MS && turnsMs.length >= MIN_TURNS) {
        endWindow()
        windowStartMs = nowMs
      }
    },

    get limit() {
      return Math.floor(limit)
    },

    get inFlight() {
      return inFlight
    },
  }
}

function clamp(value: number, low: number, high: number): number {
  return Math.min(high, Math.max(low, value))
}
