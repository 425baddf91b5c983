import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import { type AddressInfo, connect } from 'node:net'
import { Writable } from 'node:stream'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { pino } from 'pino'
import t from 'tap'
import { buildVerifiedCaller } from '../../src/auth/verified-caller.js'
import { createEventStreams } from '../../src/events/event-streams.js'
import { createExpiryQueue } from '../../src/events/expiry-queue.js'
import { createMetrics } from '../../src/metrics.js'
import { buildSnapshot } from '../../src/snapshot/build.js'
import { itemRow, snapshotRows } from '../snapshot/rows.js'

/**
 * What real sockets cannot show in a test's time: a client that stops
 * reading. Its socket is stood in for by a Writable that never drains, with
 * a backlog already waiting, as a stalled connection's would be.
 */
class StalledResponse extends Writable {
  readonly socket = null
  status = 0

  writeHead(status: number): this {
    this.status = status
    return this
  }

  override _write(_chunk: unknown, _encoding: string, _callback: () => void): void {
    // Never calls back: nothing is ever sent.
  }
}

t.test(
  'a stream whose client does not read is ended past its bound, counted and logged',
  async (t) => {
    const snapshot = buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] }))
    const metrics = createMetrics({ defaultMetrics: false })
    const lines: string[] = []
    const streams = createEventStreams({
      snapshots: { current: () => snapshot, onSwap: () => () => undefined },
      metrics,
      logger: pino({ level: 'info' }, { write: (line: string) => lines.push(line) }),
      max: 10,
    })
    t.teardown(() => streams.close())
    const caller = buildVerifiedCaller({ sub: 'slow', exp: Math.floor(Date.now() / 1000) + 300 }, [
      ['realm_access', 'roles'],
    ])
    const response = new StalledResponse()
    response.write(Buffer.alloc(100 * 1024))
    streams.open({
      response: response as unknown as ServerResponse,
      headers: {},
      appKey: 'crm',
      caller,
      acceptLanguage: undefined,
      lastEventId: undefined,
    })
    t.equal(response.status, 200)
    t.ok(response.destroyed, 'the connection is dropped')
    const ended = await metrics.eventStreamsEnded.get()
    t.equal(ended.values.find((value) => value.labels.reason === 'overflow')?.value, 1)
    t.equal((await metrics.eventStreams.get()).values[0]?.value, 0, 'no longer counted as open')
    t.ok(lines.some((line) => line.includes('the client does not read')))
  },
)

t.test(
  'the expiry queue ends items in time order, once, skipping those already done',
  async (t) => {
    let nowMs = 1_000
    const expired: string[] = []
    const done = new Set<string>()
    const queue = createExpiryQueue<string>({
      expire: (item) => expired.push(item),
      isDone: (item) => done.has(item),
      now: () => nowMs,
    })
    t.teardown(() => queue.clear())
    for (const [item, atMs] of [
      ['c', 1_030],
      ['a', 1_010],
      ['d', 1_040],
      ['b', 1_020],
      ['e', 1_000],
    ] as const)
      queue.add(item, atMs)
    done.add('d')
    nowMs = 1_035
    await new Promise((resolve) => setTimeout(resolve, 60))
    t.same(expired, ['e', 'a', 'b', 'c'], 'due items in order')
    nowMs = 2_000
    await new Promise((resolve) => setTimeout(resolve, 60))
    t.same(expired, ['e', 'a', 'b', 'c'], 'a done item is skipped')
  },
)

t.test(
  'once its socket is taken, an open stream holds neither its response nor its request',
  async (t) => {
    setFlagsFromString('--expose-gc')
    const collect = runInNewContext('gc') as () => void
    const snapshot = buildSnapshot(snapshotRows({ menuItems: [itemRow('1', 'home')] }))
    const metrics = createMetrics({ defaultMetrics: false })
    const streams = createEventStreams({
      snapshots: { current: () => snapshot, onSwap: () => () => undefined },
      metrics,
      logger: pino({ level: 'silent' }),
      max: 100,
    })
    const caller = buildVerifiedCaller({ sub: 'u', exp: Math.floor(Date.now() / 1000) + 300 }, [
      ['realm_access', 'roles'],
    ])
    const collected = { request: 0, response: 0 }
    const registry = new FinalizationRegistry<keyof typeof collected>((kind) => {
      collected[kind] += 1
    })
    const server = createServer((request, response) => {
      registry.register(request, 'request')
      registry.register(response, 'response')
      streams.open({
        response,
        headers: {},
        appKey: 'crm',
        caller,
        acceptLanguage: undefined,
        lastEventId: undefined,
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const { port } = server.address() as AddressInfo
    const count = 20
    const received: string[] = Array.from({ length: count }, () => '')
    const clients = received.map((_, index) => {
      const socket = connect(port, '127.0.0.1')
      socket.write('GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n')
      socket.setEncoding('utf8').on('data', (chunk: string) => {
        received[index] += chunk
      })
      return socket
    })
    t.teardown(() => {
      for (const socket of clients) socket.destroy()
      streams.close()
      server.close()
    })
    const deadline = Date.now() + 5_000
    while (!received.every((text) => text.includes('event: shell'))) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the first events')
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    for (let round = 0; round < 10 && collected.response < count; round += 1) {
      collect()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    t.equal((await metrics.eventStreams.get()).values[0]?.value, count, 'every stream still open')
    t.equal(collected.response, count, 'every response collected')
    t.equal(collected.request, count, 'every request collected')
  },
)
