import { Agent, createServer } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import t, { type Test } from 'tap'
import { openEventStream } from '../helpers/event-stream-client.js'
import { openConnection } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import {
  createLogCapture,
  createSeededDatabase,
  signCaller,
  startTestService,
} from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/**
 * What the drain does with each kind of connection (src/http/drain-connections.ts),
 * on the real service over real sockets: none of them may keep the process
 * up until fastify's 72 s keep-alive timeout, and none is cut before its
 * answer unless the drain's deadline has passed.
 */

const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
const logs = createLogCapture()
const SHELL = '/api/v1/shell/crm'
/**
 * Longer than any drain in these tests should take, so that a connection
 * left open shows as the deadline's warning line rather than as a slow pass.
 */
const LONG_DEADLINE_MS = 30_000

/** The deadline's warnings logged since `from` (an index into the log lines). */
function deadlineWarnings(from: number): string[] {
  return logs.lines.slice(from).filter((line) => line.includes('drain deadline'))
}

/** Request headers for the shell, all but the blank line that ends them. */
function headersWithoutEnd(token: string): string {
  return `GET ${SHELL} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${token}\r\n`
}

/**
 * Sends the start of a request and waits until the service has read it: a
 * connection whose request has begun is busy, and the drain leaves it open.
 * The server's own sockets say how much they have read.
 */
async function beginRequest(
  connection: { write(bytes: string): void },
  serverSockets: Socket[],
  bytes: string,
): Promise<void> {
  const before = serverSockets.reduce((sum, socket) => sum + socket.bytesRead, 0)
  connection.write(bytes)
  await waitFor(
    () => serverSockets.reduce((sum, socket) => sum + socket.bytesRead, 0) >= before + bytes.length,
    'the service to read the start of the request',
  )
}

/**
 * A key set address that answers only once released, so that a request
 * whose token needs the keys is still in its handler when the drain begins.
 */
async function startHeldKeySet(
  t: Test,
): Promise<{ url: string; asked(): number; release(): void }> {
  let release = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let asked = 0
  const server = createServer((_request, response) => {
    asked += 1
    void released
      .then(() => fetch(jwks.jwksUrl))
      .then((upstream) => upstream.text())
      .then((body) => response.writeHead(200, { 'content-type': 'application/json' }).end(body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    release()
    server.closeAllConnections()
    server.close()
  })
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/jwks`, asked: () => asked, release }
}

t.test(
  'an event stream on a kept-alive connection ends cleanly, and the connection closes',
  async (t) => {
    const logsFrom = logs.lines.length
    const { service, url } = await startTestService(t, {
      logs,
      db,
      jwks,
      drainDeadlineMs: LONG_DEADLINE_MS,
    })
    const token = await signCaller(jwks, { roles: ['crm-sales'] })
    // As a browser's fetch keeps it: the connection would be reused after the stream.
    const agent = new Agent({ keepAlive: true })
    t.teardown(() => agent.destroy())
    const streams = await Promise.all(
      [1, 2, 3].map(() =>
        openEventStream(url, `${SHELL}/events`, { authorization: `Bearer ${token}` }, agent),
      ),
    )
    await Promise.all(streams.map((stream) => stream.waitForEvents(1)))
    t.equal(streams[0]?.headers.connection, 'keep-alive', 'the stream was opened kept alive')

    await service.close()
    await Promise.all(streams.map((stream) => stream.ended))
    t.ok(
      streams.every((stream) => stream.endedCleanly()),
      'every stream got its last chunk',
    )
    t.same(
      deadlineWarnings(logsFrom),
      [],
      'their connections closed without waiting for the deadline',
    )
  },
)

t.test(
  'a request in its handler when the drain begins is answered with Connection: close',
  async (t) => {
    const logsFrom = logs.lines.length
    const keySet = await startHeldKeySet(t)
    const { service, url } = await startTestService(t, {
      logs,
      db,
      jwks,
      env: { OIDC_JWKS_URL: keySet.url },
      drainDeadlineMs: LONG_DEADLINE_MS,
    })
    const token = await signCaller(jwks, { roles: ['crm-sales'] })
    const connection = await openConnection(url)
    t.teardown(() => connection.destroy())
    // A whole request, kept alive: its handler waits for the keys.
    connection.write(`${headersWithoutEnd(token)}\r\n`)
    await waitFor(() => keySet.asked() > 0, 'the service to ask for the keys')

    const closed = service.close()
    await waitFor(() => !service.app.server.listening, 'the listener to close')
    keySet.release()
    const answer = await connection.nextResponse()
    t.equal(answer.status, 200, 'the request in flight is answered')
    t.equal(answer.json<{ app: { key: string } }>().app.key, 'crm', 'whole')
    t.equal(answer.headers.connection, 'close', 'and tells the client not to reuse the connection')
    await connection.closed
    t.pass('the service closed the connection after the answer')
    await closed
    t.same(deadlineWarnings(logsFrom), [], 'without waiting for the deadline')
  },
)

t.test(
  'a request that arrives during the drain on an open connection is answered with Connection: close',
  async (t) => {
    const logsFrom = logs.lines.length
    const { service, url } = await startTestService(t, {
      logs,
      db,
      jwks,
      drainDeadlineMs: LONG_DEADLINE_MS,
    })
    const serverSockets: Socket[] = []
    service.app.server.on('connection', (socket: Socket) => serverSockets.push(socket))
    const token = await signCaller(jwks, { roles: ['crm-sales'] })
    const connection = await openConnection(url)
    t.teardown(() => connection.destroy())
    connection.write(`${headersWithoutEnd(token)}\r\n`)
    const before = await connection.nextResponse()
    t.equal(before.status, 200)
    t.equal(before.headers.connection, 'keep-alive', 'kept alive before the drain')
    await beginRequest(connection, serverSockets, headersWithoutEnd(token))

    const closed = service.close()
    await waitFor(() => !service.app.server.listening, 'the listener to close')
    connection.write('\r\n')
    const during = await connection.nextResponse()
    t.equal(during.status, 200, 'answered')
    t.equal(during.headers.connection, 'close', 'with Connection: close')
    await connection.closed
    await closed
    t.same(deadlineWarnings(logsFrom), [], 'without waiting for the deadline')
  },
)

t.test('connections still open at the deadline are closed, and the close ends', async (t) => {
  const logsFrom = logs.lines.length
  const { service, url } = await startTestService(t, { logs, db, jwks, drainDeadlineMs: 300 })
  const serverSockets: Socket[] = []
  service.app.server.on('connection', (socket: Socket) => serverSockets.push(socket))
  const token = await signCaller(jwks, { roles: ['crm-sales'] })
  const connection = await openConnection(url)
  t.teardown(() => connection.destroy())
  // Never finished: only the deadline ends this request.
  await beginRequest(connection, serverSockets, headersWithoutEnd(token))
  await service.close()
  await connection.closed
  t.equal(deadlineWarnings(logsFrom).length, 1, 'the deadline says what it did')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
