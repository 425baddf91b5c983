/**
 * db/outage-log.ts on a clock of the test's own: an outage of a minute with
 * three attempts a second, as the service retries, logs three lines (down,
 * one reminder, back), not two hundred; attempts that work log nothing.
 */
import pino from 'pino'
import t from 'tap'
import { createOutageLog } from '../../src/db/outage-log.js'

function recorded() {
  const lines: { level: number; msg: string; attempts?: number; downForS?: number }[] = []
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) })
  let clock = 0
  const outage = createOutageLog({
    logger,
    now: () => clock,
    messages: { down: 'down', still: 'still down', back: 'back' },
  })
  const advance = (ms: number) => {
    clock += ms
  }
  return { lines, outage, advance, at: () => clock }
}

t.test('a minute of failed attempts, three a second, then one that works', async (t) => {
  const { lines, outage, advance } = recorded()
  // 0, 333 and 666 ms into each second, from second 0 to second 60 included.
  for (let second = 0; second <= 60; second += 1) {
    for (const offsetMs of [0, 333, 333]) {
      advance(offsetMs)
      outage.failed({ error: { code: 'ECONNREFUSED' } })
    }
    advance(334)
  }
  outage.succeeded()
  t.same(
    lines.map((line) => [line.level, line.msg]),
    [
      [40, 'down'],
      [40, 'still down'],
      [30, 'back'],
    ],
    'warn once, a reminder at the minute, info once',
  )
  t.equal(lines[1]?.attempts, 181, 'the reminder counts the attempts so far')
  t.equal(lines[2]?.downForS, 61, 'the line that says it is back says for how long it was not')
  t.notOk(outage.isDown())
})

t.test('an hour down: a reminder a minute, no more', async (t) => {
  const { lines, outage, advance } = recorded()
  for (let second = 0; second < 3_600; second += 1) {
    outage.failed({})
    advance(1_000)
  }
  t.equal(lines.filter((line) => line.msg === 'down').length, 1)
  t.equal(lines.filter((line) => line.msg === 'still down').length, 59)
})

t.test('the quiet week: attempts that work log nothing', async (t) => {
  const { lines, outage, advance } = recorded()
  for (let attempt = 0; attempt < 10_000; attempt += 1) {
    outage.succeeded()
    advance(60_000)
  }
  t.same(lines, [])
})

t.test('each outage is said anew, however soon after the last', async (t) => {
  const { lines, outage, advance } = recorded()
  for (let round = 0; round < 3; round += 1) {
    outage.failed({})
    outage.failed({})
    advance(100)
    outage.succeeded()
  }
  t.same(
    lines.map((line) => line.msg),
    ['down', 'back', 'down', 'back', 'down', 'back'],
  )
})
