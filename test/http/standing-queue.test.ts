import t from 'tap'
import { createStandingQueue, type StandingQueue } from '../../src/http/standing-queue.js'

/**
 * The shedding rule on a fake clock: turns of the event loop given as start and end times. A
 * burst that drains within the interval is never shed; a queue that stands is, but only the
 * requests met late in their turn; a short turn, or the loop free between two turns, ends it.
 */

/** Runs back-to-back turns of the given lengths from `startMs`; returns when the last ended. */
function runTurns(queue: StandingQueue, startMs: number, lengthsMs: number[]): number {
  let nowMs = startMs
  for (const lengthMs of lengthsMs) {
    queue.recordTurn(nowMs, nowMs + lengthMs)
    nowMs += lengthMs
  }
  return nowMs
}

/** Whether a request met late in a turn of `lengthMs` starting at `nowMs` would be shed. */
const shedsLateIn = (queue: StandingQueue, nowMs: number, lengthMs: number) =>
  queue.shouldShed(lengthMs - 1, nowMs + lengthMs - 1)

t.test('an idle instance, and a full load of short turns, shed nothing', async (t) => {
  const queue = createStandingQueue()
  t.notOk(queue.shouldShed(10_000, 0), 'before any turn')
  const end = runTurns(queue, 0, Array(2_000).fill(4))
  t.notOk(shedsLateIn(queue, end, 4), 'after 8 s of 4 ms turns')
  t.notOk(queue.isStanding(end))
})

t.test('a burst that drains within the interval is answered in full', async (t) => {
  const queue = createStandingQueue()
  // 200 requests at once: a few long turns, 900 ms in all, then the queue is empty.
  let nowMs = 10_000
  for (const lengthMs of [300, 300, 300]) {
    t.notOk(shedsLateIn(queue, nowMs, lengthMs), `a request late in a ${lengthMs} ms turn`)
    nowMs = runTurns(queue, nowMs, [lengthMs])
  }
  nowMs = runTurns(queue, nowMs, [3])
  // A second burst right after: the interval starts again from the short turn.
  for (const lengthMs of [300, 300, 300]) {
    t.notOk(shedsLateIn(queue, nowMs, lengthMs), 'the next burst too')
    nowMs = runTurns(queue, nowMs, [lengthMs])
  }
})

t.test('a queue that stands is shed, only late in each turn, until it drains', async (t) => {
  const queue = createStandingQueue()
  const startMs = 5_000
  // Back-to-back turns of 80 ms: every turn long, for longer than the interval.
  let nowMs = runTurns(queue, startMs, Array(12).fill(80))
  t.ok(nowMs - startMs < 1_000 + 80, 'just under a second and a turn')
  nowMs = runTurns(queue, nowMs, Array(2).fill(80))
  t.ok(queue.isStanding(nowMs), 'no short turn for a second: standing')
  t.ok(shedsLateIn(queue, nowMs, 80), 'a request met 79 ms into its turn is shed')
  t.notOk(queue.shouldShed(20, nowMs + 20), 'one met 20 ms into it is served')
  t.ok(queue.shouldShed(51, nowMs + 51), 'past the 50 ms target: shed')
  // The clients wait their Retry-After: the turns shorten, and one short turn ends the shedding.
  nowMs = runTurns(queue, nowMs, [80, 10])
  t.notOk(queue.isStanding(nowMs), 'drained')
  t.notOk(shedsLateIn(queue, nowMs, 80), 'the next long turn is served whole')
})

t.test('the loop free between long turns is a queue that drained', async (t) => {
  const queue = createStandingQueue()
  let nowMs = 0
  for (let i = 0; i < 40; i += 1) {
    nowMs = runTurns(queue, nowMs, [120]) + 60
  }
  t.notOk(shedsLateIn(queue, nowMs, 120), '40 long turns, each after 60 ms of rest: never shed')
})

t.test('a single turn longer than the interval is a queue standing', async (t) => {
  const queue = createStandingQueue()
  const nowMs = runTurns(queue, 0, [3])
  t.notOk(queue.shouldShed(900, nowMs + 900), 'within the interval')
  t.ok(queue.shouldShed(1_200, nowMs + 1_200), 'past it, still in the same turn')
})
