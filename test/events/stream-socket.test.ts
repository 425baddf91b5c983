import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, type Socket } from 'node:net'
import t from 'tap'
import { type StreamOutput, takeStreamSocket } from '../../src/events/stream-socket.js'

type Handler = (request: IncomingMessage, response: ServerResponse) => void

async function startServer(
  t: { teardown(fn: () => unknown): void },
  handler: Handler,
): Promise<{ server: Server; port: number }> {
  const server = createServer(handler)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { server, port: (server.address() as AddressInfo).port }
}

/** A client on a bare socket: what it has read so far, and whether the server closed. */
function openClient(port: number, path = '/events') {
  const socket = connect(port, '127.0.0.1')
  socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`)
  let received = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    received += chunk
  })
  const ended = once(socket, 'end').then(() => true)
  return { socket, received: () => received, ended }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** The handler of an event stream: the head and a first event, then the socket taken a tick later. */
function streamHandler(taken: (output: StreamOutput | undefined, serverSocket: Socket) => void) {
  return (_request: IncomingMessage, response: ServerResponse) => {
    response.useChunkedEncodingByDefault = false
    response.writeHead(200, { 'content-type': 'text/event-stream' })
    response.write('first\n\n')
    const serverSocket = response.socket as Socket
    process.nextTick(() => taken(takeStreamSocket(response), serverSocket))
  }
}

/** A server whose one route is an event stream, a client on it, and the stream once its socket is taken. */
async function openTakenStream(t: { teardown(fn: () => unknown): void }) {
  let output: StreamOutput | undefined
  let serverSocket: Socket | undefined
  const { server, port } = await startServer(
    t,
    streamHandler((taken, socket) => {
      output = taken
      serverSocket = socket
    }),
  )
  const client = openClient(port)
  await until(() => output !== undefined, 'the takeover')
  return { server, client, output: output as StreamOutput, serverSocket: serverSocket as Socket }
}

t.test('the socket is taken once the head is out, and events follow on it', async (t) => {
  const { server, client, output, serverSocket } = await openTakenStream(t)
  output.write('second\n\n')
  await until(() => client.received().includes('second'), 'the second event')
  t.match(client.received(), /^HTTP\/1\.1 200 OK\r\n/, 'the head first')
  t.match(
    client.received(),
    /connection: close\r\n/i,
    'a body that runs until the connection closes',
  )
  t.notMatch(client.received(), /transfer-encoding/i, 'no chunk framing')
  t.ok(client.received().endsWith('\r\n\r\nfirst\n\nsecond\n\n'), 'the events as written, in order')

  const listenerNames = ['data', 'end', 'close', 'error', 'timeout', 'drain'].flatMap((event) =>
    serverSocket.listeners(event).map((listener) => listener.name),
  )
  t.notOk(
    listenerNames.some((name) => /socketOn|onServerResponseClose/.test(name)),
    "none of the HTTP server's listeners is left on the socket",
  )
  t.equal((serverSocket as Socket & { parser?: unknown }).parser, null, 'its parser given back')

  // The server no longer counts it among its HTTP connections: neither call touches it.
  server.closeIdleConnections()
  server.closeAllConnections()
  output.write('third\n\n')
  await until(() => client.received().includes('third'), 'an event after closeAllConnections')
  t.pass('the stream outlives the server closing its HTTP connections')
  client.socket.destroy()
})

t.test("the client's leaving closes the taken socket at once", async (t) => {
  const { client, output } = await openTakenStream(t)
  const closed = new Promise<void>((resolve) => output.onClose(resolve))
  client.socket.end()
  await closed
  t.pass('onClose ran')
})

t.test('end sends what is queued, then closes the connection', async (t) => {
  const { server, client, output } = await openTakenStream(t)
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()))
  output.write('last\n\n')
  output.end()
  t.equal(await client.ended, true, 'the client sees the end')
  t.ok(client.received().endsWith('last\n\n'), 'after the last event')
  await serverClosed
  t.pass('server.close() completes once the stream has ended')
})

t.test('the socket is not taken before the head is written; the response works on', async (t) => {
  let result: StreamOutput | undefined | 'not called' = 'not called'
  const { port } = await startServer(t, (_request, response) => {
    result = takeStreamSocket(response)
    response.end('plain')
  })
  const client = openClient(port, '/plain')
  await until(() => client.received().endsWith('plain'), 'the plain response')
  t.equal(result, undefined, 'nothing taken')
  t.match(client.received(), /^HTTP\/1\.1 200 OK\r\n/)
  client.socket.destroy()
})

t.test('the server answers other requests normally after a takeover', async (t) => {
  let output: StreamOutput | undefined
  const { port } = await startServer(t, (request, response) => {
    if (request.url === '/events') {
      streamHandler((taken) => {
        output = taken
      })(request, response)
    } else response.end('ok')
  })
  const streamClient = openClient(port)
  await until(() => output !== undefined, 'the takeover')
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const plain = await fetch(`http://127.0.0.1:${port}/plain`)
    t.equal(await plain.text(), 'ok', `request ${attempt + 1}`)
  }
  streamClient.socket.destroy()
})

t.test('a taken socket counts what a client that stopped reading has not taken', async (t) => {
  const { client, output } = await openTakenStream(t)
  // The client stops reading: the kernel's buffers fill, then the socket's own queue grows.
  client.socket.pause()
  const chunk = 'x'.repeat(16 * 1024)
  for (let writes = 0; writes < 1_000 && output.writableLength <= 64 * 1024; writes += 1) {
    output.write(chunk)
    await new Promise((resolve) => setImmediate(resolve))
  }
  t.ok(output.writableLength > 64 * 1024, 'unsent bytes pass the streams bound')
  const closed = new Promise<void>((resolve) => output.onClose(resolve))
  output.destroy()
  await closed
  t.pass('destroyed, the socket closes')
  client.socket.destroy()
})
