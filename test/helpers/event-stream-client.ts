import { type Agent, type IncomingHttpHeaders, type IncomingMessage, request } from 'node:http'
import { createParser, type EventSourceMessage } from 'eventsource-parser'

/**
 * A client of one event stream over node:http, reading it with a real SSE
 * parser (eventsource-parser), as a browser's fetch-based client would.
 */
export interface EventStreamClient {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** Every event so far, in order. */
  readonly events: EventSourceMessage[]
  /** Every comment line so far (`keep-alive`). */
  readonly comments: string[]
  /** The body, for a response that is not a stream (a problem). */
  body(): Promise<string>
  /** Resolves when the stream is over: ended by the server, reset, or closed by us. */
  readonly ended: Promise<void>
  hasEnded(): boolean
  /**
   * Whether the server ended the response as HTTP says (the last chunk
   * received), rather than the connection breaking off in the middle.
   */
  endedCleanly(): boolean
  /** Waits until `count` events have arrived in all; resolves with the last of them. */
  waitForEvents(count: number, timeoutMs?: number): Promise<EventSourceMessage>
  /** Stops reading: the socket's receive buffer fills and the server's writes back up. */
  pause(): void
  close(): void
}

/**
 * Without an agent the request says `Connection: close`; with a keep-alive
 * agent the connection is kept for reuse after the stream ends, as a
 * browser's fetch keeps it.
 */
export function openEventStream(
  baseUrl: string,
  path: string,
  headers: Record<string, string> = {},
  agent: Agent | false = false,
): Promise<EventStreamClient> {
  const { hostname, port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: hostname,
        port,
        path,
        headers: { accept: 'text/event-stream', ...headers },
        agent,
      },
      (incoming) => resolve(readStream(incoming, () => outgoing.destroy())),
    )
    outgoing.setTimeout(15_000, () => outgoing.destroy(new Error(`no answer to ${path}`)))
    outgoing.on('error', reject)
    outgoing.end()
  })
}

function readStream(incoming: IncomingMessage, destroy: () => void): EventStreamClient {
  const events: EventSourceMessage[] = []
  const comments: string[] = []
  const waiters = new Set<() => void>()
  const chunks: Buffer[] = []
  let ended = false
  const parser = createParser({
    onEvent(event) {
      events.push(event)
      for (const wake of waiters) wake()
    },
    onComment(comment) {
      comments.push(comment.trim())
    },
  })
  incoming.setTimeout(0)
  const isStream = incoming.headers['content-type']?.startsWith('text/event-stream') === true
  incoming.on('data', (chunk: Buffer) => {
    if (isStream) parser.feed(chunk.toString('utf8'))
    else chunks.push(chunk)
  })
  const endedPromise = new Promise<void>((resolve) => {
    const finish = () => {
      ended = true
      for (const wake of waiters) wake()
      resolve()
    }
    incoming.on('end', finish)
    incoming.on('close', finish)
    incoming.on('error', finish)
  })
  return {
    status: incoming.statusCode ?? 0,
    headers: incoming.headers,
    events,
    comments,
    async body() {
      await endedPromise
      return Buffer.concat(chunks).toString('utf8')
    },
    ended: endedPromise,
    hasEnded: () => ended,
    endedCleanly: () => incoming.complete,
    waitForEvents(count, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const event = events[count - 1]
          if (event !== undefined) {
            cleanUp()
            resolve(event)
          } else if (ended) {
            cleanUp()
            reject(new Error(`the stream ended after ${events.length} of ${count} events`))
          }
        }
        const timer = setTimeout(() => {
          cleanUp()
          reject(new Error(`${events.length} of ${count} events after ${timeoutMs} ms`))
        }, timeoutMs)
        const cleanUp = () => {
          clearTimeout(timer)
          waiters.delete(check)
        }
        waiters.add(check)
        check()
      })
    },
    pause() {
      incoming.pause()
    },
    close() {
      destroy()
    },
  }
}
