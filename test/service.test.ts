import t from 'tap'
import { findFreePort } from '../src/embedded/embedded.js'
import { openEventStream } from './helpers/event-stream-client.js'
import { bearer, httpRequest } from './helpers/http-client.js'
import { startJwksServer } from './helpers/jwks-server.js'
import { createLogCapture, createSeededDatabase, startTestService } from './helpers/service.js'
import { waitFor } from './helpers/wait.js'

/**
 * The service's own shutdown, in-process (src/service.ts): the delay during
 * which it is not ready but serves, then the drain. What signals mean, and
 * the process's exit, are test/main.test.ts's.
 */

const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
const logs = createLogCapture()
const SHELL = '/api/v1/shell/crm'

t.test(
  'shutdown: not ready at once, every route served during the delay, then drained',
  async (t) => {
    const { service, url, token } = await startTestService(t, { logs, db, jwks })
    const caller = await token({ roles: ['crm-sales'] })
    const stream = await openEventStream(url, `${SHELL}/events`, {
      authorization: `Bearer ${caller}`,
    })
    await stream.waitForEvents(1)

    const shutdown = service.shutdown({ delayMs: 1_000 })
    const ready = await httpRequest(url, '/readyz')
    t.equal(ready.status, 503, '/readyz is 503 at once')
    t.same(ready.json(), { status: 'not_ready', reason: 'shutting down' })
    const shell = await httpRequest(url, SHELL, bearer(caller))
    t.equal(shell.status, 200, 'the shell is still served')
    const late = await openEventStream(url, `${SHELL}/events`, {
      authorization: `Bearer ${caller}`,
    })
    t.equal(late.status, 200, 'a stream still opens')
    await late.waitForEvents(1)
    t.notOk(stream.hasEnded(), 'open streams stay open during the delay')

    await shutdown
    await Promise.all([stream.ended, late.ended])
    t.ok(stream.endedCleanly() && late.endedCleanly(), 'then the streams are ended, cleanly')
    const after = await httpRequest(url, '/healthz').catch((error: NodeJS.ErrnoException) => error)
    t.match(after, { code: 'ECONNREFUSED' }, 'and the listener is closed')
    t.ok(
      logs.lines.some((line) => line.includes('"msg":"draining')),
      'the drain is logged',
    )
  },
)

t.test('close() during a shutdown delay closes at once', async (t) => {
  const from = logs.lines.length
  const { service, url } = await startTestService(t, { logs, db, jwks })
  // Longer than the test's timeout: only close() can end it in time.
  const shutdown = service.shutdown({ delayMs: 10 * 60_000 })
  await waitFor(async () => (await httpRequest(url, '/readyz')).status === 503, 'not ready')
  await service.close()
  await shutdown
  t.notOk(
    logs.lines.slice(from).some((line) => line.includes('"msg":"draining')),
    'the delay ended without a drain of its own',
  )
})

t.test('closing before the database was ever reached ends the retries', async (t) => {
  const from = logs.lines.length
  const closedPort = await findFreePort()
  const { service } = await startTestService(t, {
    logs,
    db,
    jwks,
    env: { DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing` },
    waitForSnapshot: false,
  })
  const failedAttempt = () =>
    logs.lines.slice(from).find((line) => line.includes('database not ready for migrations'))
  await waitFor(() => failedAttempt() !== undefined, 'a failed attempt')
  const attempt = JSON.parse(failedAttempt() ?? '{}')
  t.equal(attempt.error?.code, 'ECONNREFUSED', 'the line says what failed')
  t.notOk(attempt.err, 'and no stack, which every retry would repeat')
  await service.close()
  await service.started
  t.pass('the start ends quietly with the service')
  const retriesAfterClose = logs.lines
    .slice(from)
    .filter((line) => line.includes('CONNECTION_ENDED'))
  t.same(retriesAfterClose, [], 'no attempt on the closed pool')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
