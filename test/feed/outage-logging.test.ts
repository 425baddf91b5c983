/**
 * An outage logs a handful of lines, not a line per attempt (docs/operations.md,
 * "When things fail"): the real service, in-process, on a real PostgreSQL that
 * is stopped, and on an address where nothing answers at start. Its outages'
 * clock is the test's own, moved a minute ahead, so that a minute's reminder
 * is seen without waiting a minute; the attempts, a few a second, are counted
 * in shell_database_attempts_total.
 */
import t from 'tap'
import { connectDatabase } from '../../src/db/connect.js'
import { migrateDatabase } from '../../src/db/migrate.js'
import { findFreePort } from '../../src/embedded/embedded.js'
import { readMetric } from '../helpers/metrics.js'
import { createLogCapture, importSeeds, startTestService } from '../helpers/service.js'
import { startPrivatePostgres } from '../helpers/test-postgres.js'
import { waitFor } from '../helpers/wait.js'

/** Past the outage log's minute between reminders. */
const A_MINUTE_ON_MS = 61_000

interface LogLine {
  readonly level: number
  readonly msg: string
}

/** A clock that runs with the real one and can be moved ahead. */
function skewedClock() {
  let skewMs = 0
  return {
    now: () => Date.now() + skewMs,
    moveAhead: (ms: number) => {
      skewMs += ms
    },
  }
}

t.test('a running instance whose database stops: each change said once', async (t) => {
  const server = await startPrivatePostgres()
  t.teardown(() => server.remove())
  const writer = connectDatabase(server.adminUrl, { max: 1, applicationName: 'test-writer' })
  t.teardown(() => writer.end({ timeout: 1 }))
  await migrateDatabase(writer)
  await importSeeds(writer)
  const clock = skewedClock()
  const logs = createLogCapture()
  const { service } = await startTestService(t, {
    logs,
    db: { url: server.adminUrl, name: 'postgres', sql: writer, adminUrl: server.adminUrl },
    env: { DATABASE_URL: server.adminUrl },
    now: clock.now,
  })
  const { metrics } = service
  const listening = async () => (await readMetric(metrics.feedListening)) === 1
  const failedListens = () =>
    readMetric(metrics.databaseAttempts, { task: 'listen', result: 'error' })
  await waitFor(listening, 'LISTEN')
  const from = logs.lines.length
  const lines = () => logs.lines.slice(from).map((line) => JSON.parse(line) as LogLine)

  await server.stop()
  await waitFor(async () => (await failedListens()) >= 5, 'five failed attempts to listen')
  clock.moveAhead(A_MINUTE_ON_MS)
  const beforeReminder = await failedListens()
  await waitFor(async () => (await failedListens()) >= beforeReminder + 2, 'two more attempts')
  await server.start()
  await waitFor(listening, 'listening again', 30_000)

  const said = (pattern: RegExp) => lines().filter((line) => pattern.test(line.msg))
  t.equal(said(/^the listening connection was lost/).length, 1, 'the loss: one warn line')
  t.equal(said(/^cannot listen for changes/).length, 1, 'unreachable: one warn line')
  t.equal(said(/^still cannot listen/).length, 1, 'a minute on: one reminder')
  t.equal(said(/^the listening connection reaches the database again/).length, 1, 'back: one')
  const warnings = lines().filter((line) => line.level >= 40)
  const attempts = await failedListens()
  t.ok(warnings.length <= 5, `${warnings.length} warn lines in all, for ${attempts} attempts`)
  t.ok(attempts > warnings.length, 'the attempts are counted, not logged')
})

t.test('an instance whose database never answered: preparation said once', async (t) => {
  const closedPort = await findFreePort()
  const clock = skewedClock()
  const logs = createLogCapture()
  const { service } = await startTestService(t, {
    logs,
    env: { DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing` },
    waitForSnapshot: false,
    now: clock.now,
  })
  const failed = () =>
    readMetric(service.metrics.databaseAttempts, { task: 'prepare', result: 'error' })
  await waitFor(async () => (await failed()) >= 5, 'five failed attempts to prepare')
  clock.moveAhead(A_MINUTE_ON_MS)
  const beforeReminder = await failed()
  await waitFor(async () => (await failed()) >= beforeReminder + 2, 'two more attempts')
  const lines = logs.lines.map((line) => JSON.parse(line) as LogLine)
  const warnings = lines.filter((line) => line.level >= 40).map((line) => line.msg)
  t.equal(warnings.length, 2, `two warn lines for ${await failed()} attempts`)
  t.match(warnings[0], /^database not ready for migrations/)
  t.match(warnings[1], /^database still not ready for migrations/)
})
