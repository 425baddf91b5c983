import t from 'tap'
import { createSignalClassifier, delayFor, SAME_SIGNAL_WINDOW_MS } from '../src/shutdown-signals.js'

/** A clock the test moves by hand. */
function createClock() {
  let nowMs = 10_000
  return { now: () => nowMs, advance: (ms: number) => (nowMs += ms) }
}

t.test('the first signal shuts down; the same one again within the window is a copy', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const clock = createClock()
    const classify = createSignalClassifier(clock.now)
    t.equal(classify(signal), 'shutdown', `${signal} first`)
    t.equal(classify(signal), 'copy', `${signal} again at once (npm passing it on)`)
    clock.advance(SAME_SIGNAL_WINDOW_MS - 1)
    t.equal(classify(signal), 'copy', `${signal} again just inside the window`)
  }
})

t.test('the same signal after the window is a second signal', async (t) => {
  const clock = createClock()
  const classify = createSignalClassifier(clock.now)
  t.equal(classify('SIGTERM'), 'shutdown')
  t.equal(classify('SIGTERM'), 'copy')
  clock.advance(SAME_SIGNAL_WINDOW_MS)
  t.equal(classify('SIGTERM'), 'second', 'the window runs from the first signal, not the copy')
})

t.test('another signal is a second signal at once', async (t) => {
  const classify = createSignalClassifier(createClock().now)
  t.equal(classify('SIGTERM'), 'shutdown')
  t.equal(classify('SIGINT'), 'second', 'Ctrl-C during the delay: out now')
  const reversed = createSignalClassifier(createClock().now)
  t.equal(reversed('SIGINT'), 'shutdown')
  t.equal(reversed('SIGTERM'), 'second')
})

t.test('only SIGTERM waits SHUTDOWN_DELAY_S', async (t) => {
  t.equal(delayFor('SIGTERM', 5), 5_000)
  t.equal(delayFor('SIGTERM', 0), 0)
  t.equal(delayFor('SIGINT', 5), 0)
})
