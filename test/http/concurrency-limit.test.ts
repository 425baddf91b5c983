import t from 'tap'
import {
  type ConcurrencyLimit,
  createAdaptiveConcurrencyLimit,
} from '../../src/http/concurrency-limit.js'

/**
 * The adaptive limit on its own, on a made-up clock: turns longer than their budget shrink it,
 * turns within it let a limit that turned requests away grow, and it stays within its bounds.
 */

/** A limit whose first window starts at 0 ms on the made-up clock (with a turn of 0 ms). */
function startLimit(options: Parameters<typeof createAdaptiveConcurrencyLimit>[0]) {
  const limit = createAdaptiveConcurrencyLimit(options)
  limit.recordTurn({ durationMs: 0, accepted: false }, 0)
  return limit
}

/** A window of the limit: `turns` turns of `turnMs`, 100 ms of clock in all; returns the new clock. */
function recordWindow(
  limit: ConcurrencyLimit,
  nowMs: number,
  turnMs: number,
  options: { accepted?: boolean; admit?: number; shed?: number; turns?: number } = {},
): number {
  const { accepted = false, admit = 0, shed = 0, turns = 10 } = options
  for (let i = 0; i < admit; i += 1) if (limit.tryAcquire(nowMs)) limit.release()
  // A full limit turns the rest away: each try counts as shed.
  let held = 0
  if (shed > 0) {
    while (limit.tryAcquire(nowMs)) held += 1
    for (let i = 1; i < shed; i += 1) limit.tryAcquire(nowMs)
  }
  for (; held > 0; held -= 1) limit.release()
  let clock = nowMs
  for (let turn = 0; turn < turns; turn += 1) {
    clock += 100 / turns
    limit.recordTurn({ durationMs: turnMs, accepted }, clock)
  }
  return clock
}

t.test('takes slots up to the limit, then refuses until one is given back', async (t) => {
  const limit = createAdaptiveConcurrencyLimit({ initial: 3, min: 1 })
  t.ok(limit.tryAcquire(0))
  t.ok(limit.tryAcquire(0))
  t.ok(limit.tryAcquire(0))
  t.notOk(limit.tryAcquire(0), 'the fourth is refused')
  t.equal(limit.inFlight, 3)
  limit.release()
  t.ok(limit.tryAcquire(0), 'a slot given back is taken again')
})

t.test(
  'turns past their budget two windows running shrink the limit, by half at most',
  async (t) => {
    const limit = startLimit({ initial: 100 })
    let clock = recordWindow(limit, 0, 25, { admit: 50 })
    t.equal(limit.limit, 100, 'one slow window is a disturbance, not a load')
    clock = recordWindow(limit, clock, 25, { admit: 50 })
    t.equal(limit.limit, 80, '25 ms turns against 20 ms: 100 x 20/25')
    clock = recordWindow(limit, clock, 200, { admit: 50 })
    t.equal(limit.limit, 40, 'ten times the budget: halved, not a tenth')
    recordWindow(limit, clock, 10, { admit: 50 })
    t.equal(limit.limit, 40, 'short turns, nobody turned away: no reason to grow')
  },
)

t.test('a limit that turns requests away grows while turns stay short', async (t) => {
  const limit = startLimit({ initial: 20 })
  let clock = 0
  const seen: number[] = []
  for (let window = 0; window < 4; window += 1) {
    clock = recordWindow(limit, clock, 5, { admit: 30, shed: 10 })
    seen.push(limit.limit)
  }
  t.ok(
    seen.every((value, index) => value > (seen[index - 1] ?? 20)),
    `grows each window: ${seen.join(', ')}`,
  )
  t.ok((seen[0] ?? 0) <= 30, 'a share of the way to double, not double')
})

t.test('turns taken up by refused requests do not shrink it', async (t) => {
  const limit = startLimit({ initial: 50 })
  recordWindow(limit, 0, 100, { admit: 10, shed: 500 })
  t.ok(limit.limit >= 50, `clients back at once after a 503 do not push it down: ${limit.limit}`)
})

t.test('while connections wait to be accepted, turns get 1 ms', async (t) => {
  const limit = startLimit({ initial: 40 })
  const storm = { accepted: true, admit: 50 }
  let clock = recordWindow(limit, 0, 4, storm)
  t.equal(limit.limit, 40, 'one window of accepts is a pool opening its connections')
  clock = recordWindow(limit, clock, 4, storm)
  t.equal(limit.limit, 20, 'two in a row are a backlog: 4 ms turns halve it')
  recordWindow(limit, clock, 4, { admit: 50 })
  t.equal(limit.limit, 20, 'the backlog taken, 4 ms is within 20 ms again')
})

t.test('stays within its bounds', async (t) => {
  const low = startLimit({ initial: 10, min: 6 })
  let clock = 0
  for (let window = 0; window < 10; window += 1)
    clock = recordWindow(low, clock, 500, { admit: 20 })
  t.equal(low.limit, 6, 'never below the least')
  const high = startLimit({ initial: 10, max: 12 })
  clock = 0
  for (let window = 0; window < 10; window += 1) {
    clock = recordWindow(high, clock, 1, { admit: 20, shed: 5 })
  }
  t.equal(high.limit, 12, 'never above the most')
  const defaults = createAdaptiveConcurrencyLimit()
  t.equal(defaults.limit, 50, 'by default: a full load of 50 connections')
})

t.test('after a quiet second, the next burst starts from the initial limit', async (t) => {
  const limit = startLimit({ initial: 40 })
  let clock = recordWindow(limit, 0, 200, { admit: 50 })
  clock = recordWindow(limit, clock, 200, { admit: 50 })
  t.equal(limit.limit, 20, 'an overload brought it down')
  clock = recordWindow(limit, clock + 500, 10, { admit: 50 })
  t.equal(limit.limit, 20, 'half a second apart: the same burst')
  t.ok(limit.tryAcquire(clock + 1_001), 'a second later')
  t.equal(limit.limit, 40, 'back to the initial limit')
})
