import { connect, type Socket } from 'node:net'

/** One stream to open: the path (`/api/v1/shell/APP/events`), the caller, their language. */
export interface StreamSpec {
  readonly path: string
  readonly token: string
  readonly acceptLanguage?: string
}

interface Client {
  /** A new one when a refused stream is opened again. */
  socket: Socket
  events: number
  /** The connection was closed, by either side. */
  closed: boolean
  /** The end of the last chunk, where an event's name may have been cut in two. */
  tail: string
}

const SHELL_EVENT = 'event: shell'
/** Streams connecting at once: more would overflow the server's listen backlog into SYN retries. */
const OPEN_BATCH = 100
const OPEN_TIMEOUT_MS = 30_000

/**
 * Event-stream clients on raw sockets: a handwritten request, then each
 * chunk scanned for `event: shell`, no HTTP or SSE parser, so that ten
 * thousand of them cost the benchmark little and the client is not what is
 * measured. Opens them in batches, each stream counted open at its first event.
 */
export async function openEventStreams(url: string, specs: readonly StreamSpec[]) {
  const { hostname, port } = new URL(url)
  const clients: Client[] = []
  /** Events every client should have seen; `behind` counts those short of it. */
  let target = 1
  let behind = 0
  let caughtUp: ((lastAtMs: number) => void) | undefined
  /** When the first client behind reached the target. */
  let firstAtMs: number | undefined
  const failures: string[] = []
  /** Streams refused with 503 and Retry-After, and opened again after it. */
  let refusals = 0

  const countEvents = (client: Client, text: string) => {
    const scanned = client.tail + text
    let found = 0
    for (
      let at = scanned.indexOf(SHELL_EVENT);
      at !== -1;
      at = scanned.indexOf(SHELL_EVENT, at + 1)
    )
      found += 1
    client.tail = scanned.slice(-(SHELL_EVENT.length - 1))
    const wasBehind = client.events < target
    client.events += found
    if (!wasBehind || client.events < target) return
    firstAtMs ??= performance.now()
    if (--behind === 0) caughtUp?.(performance.now())
  }

  /** Connects `client` for `spec`; a 503 is tried again after its Retry-After, as clients do. */
  const connectClient = (client: Client, spec: StreamSpec) => {
    const socket = connect({ host: hostname, port: Number(port) })
    client.socket = socket
    client.closed = false
    const language = spec.acceptLanguage ? `Accept-Language: ${spec.acceptLanguage}\r\n` : ''
    socket.setEncoding('latin1')
    socket.write(
      `GET ${spec.path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${spec.token}\r\n${language}\r\n`,
    )
    socket.once('data', (head: string) => {
      const retryAfterS = /^HTTP\/1\.1 503[\s\S]*?\r\nretry-after: (\d+)\r\n/i.exec(head)?.[1]
      if (retryAfterS !== undefined) {
        refusals += 1
        socket.destroy()
        setTimeout(() => connectClient(client, spec), Number(retryAfterS) * 1000)
        return
      }
      if (!head.startsWith('HTTP/1.1 200')) failures.push(head.slice(0, head.indexOf('\r\n')))
      socket.on('data', (text: string) => countEvents(client, text))
      countEvents(client, head)
    })
    socket.on('error', (error) => failures.push(error.message))
    socket.once('close', () => {
      if (client.socket === socket) client.closed = true
    })
  }

  const openOne = (spec: StreamSpec) => {
    const client = { events: 0, tail: '', closed: false } as Client
    clients.push(client)
    connectClient(client, spec)
  }

  /** Resolves when every client has seen `events` events, with when the first and the last did. */
  const untilEvery = (events: number, timeoutMs: number) =>
    new Promise<{ firstAtMs: number; lastAtMs: number }>((resolve, reject) => {
      target = events
      firstAtMs = undefined
      behind = clients.filter((client) => client.events < events).length
      if (behind === 0)
        return resolve({ firstAtMs: performance.now(), lastAtMs: performance.now() })
      const timer = setTimeout(() => {
        caughtUp = undefined
        reject(
          new Error(
            `${behind} of ${clients.length} streams short of ${events} events; ${failures.slice(0, 3).join('; ')}`,
          ),
        )
      }, timeoutMs)
      caughtUp = (lastAtMs) => {
        clearTimeout(timer)
        caughtUp = undefined
        resolve({ firstAtMs: firstAtMs ?? lastAtMs, lastAtMs })
      }
    })

  for (let start = 0; start < specs.length; start += OPEN_BATCH) {
    for (const spec of specs.slice(start, start + OPEN_BATCH)) openOne(spec)
    // Room for a stream shed twice while opening, each time told to wait up to 5 s.
    await untilEvery(1, OPEN_TIMEOUT_MS)
  }
  return {
    count: clients.length,
    /**
     * Call before the change that should send every stream one more event;
     * resolves with the times the first and the last stream got it.
     */
    untilNextEvent: (timeoutMs: number) => untilEvery(target + 1, timeoutMs),
    /** Fewest and most events a stream has seen. */
    eventRange: () => {
      const counts = clients.map((client) => client.events)
      return { min: Math.min(...counts), max: Math.max(...counts) }
    },
    failures: () => failures.length,
    /** Answers of 503 with Retry-After, each opened again after it. */
    refusals: () => refusals,
    /** Streams whose connection neither side has closed. */
    openCount: () => clients.filter((client) => !client.closed).length,
    close: () => {
      for (const { socket } of clients) socket.destroy()
    },
  }
}

export type EventStreamClients = Awaited<ReturnType<typeof openEventStreams>>
