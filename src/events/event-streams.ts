import type { ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import type { VerifiedCaller } from '../auth/verify-token.js'
import type { Metrics, StreamEndReason } from '../metrics.js'
import type { Snapshot } from '../snapshot/types.js'
import { createExpiryQueue } from './expiry-queue.js'
import { formatGoneEvent, formatShellEvent, KEEP_ALIVE_COMMENT } from './sse-text.js'
import { createStreamGroups, type EventStream } from './stream-groups.js'
import { type ReplyHeaders, writeStreamHead } from './stream-response.js'
import { responseOutput, takeStreamSocket } from './stream-socket.js'

export interface OpenStreamRequest {
  readonly response: ServerResponse
  /** Headers already set on the reply (CORS, for example), written with the stream's own. */
  readonly headers: ReplyHeaders
  readonly appKey: string
  readonly caller: VerifiedCaller
  readonly acceptLanguage: string | undefined
  readonly lastEventId: string | undefined
}

export interface EventStreams {
  /** Why a stream cannot open now (shutting down, or the limit reached), else undefined. */
  refusal(): 'closing' | 'full' | undefined
  /** Starts the stream on `response`, on the app of the snapshot in service. */
  open(request: OpenStreamRequest): void
  /** Ends every stream and refuses new ones: shutdown. */
  close(): void
}

/** Seconds a client is told to wait when the instance has no room for another stream. */
export const STREAMS_FULL_RETRY_AFTER_S = 10
/**
 * A comment this often keeps proxies and load balancers (idle timeouts of
 * 60 s are common) from cutting a quiet stream; the contract asks for 30 s
 * at most.
 */
const KEEP_ALIVE_MS = 15_000
/**
 * Changes are sent at once, then at most once per this interval while they
 * keep coming: a burst of commits gives a few events carrying the latest tag,
 * not one per commit, and a change still reaches clients well within a second.
 */
const MIN_FLUSH_INTERVAL_MS = 250
/**
 * Bytes a stream may have waiting to be sent. Its events are a few hundred
 * bytes; this much waiting means the client stopped reading (or the network
 * to it is gone), and the stream is ended rather than left to grow.
 */
const MAX_UNSENT_BYTES = 64 * 1024

/**
 * The open event streams of one instance. A reload is compared app by app
 * with what the streams last saw: only apps whose view changed are looked at,
 * one variant tag per group of callers, and only streams whose tag changed
 * are written to. One timer keeps every stream alive, one ends them at their
 * tokens' `exp`.
 */
export function createEventStreams(deps: {
  readonly snapshots: {
    current(): Snapshot | undefined
    onSwap(listener: (snapshot: Snapshot) => void): () => void
  }
  readonly metrics: Metrics
  readonly logger: Logger
  readonly max: number
}): EventStreams {
  const { snapshots, metrics, logger, max } = deps
  const groups = createStreamGroups({
    shell: sendShell,
    gone(stream) {
      if (stream.ended) return
      write(stream, formatGoneEvent(stream.group.appKey))
      metrics.eventsSent.inc({ event: 'gone' })
      endStream(stream, 'gone')
    },
  })
  let openCount = 0
  let closing = false
  let keepAliveTimer: NodeJS.Timeout | undefined
  let flushTimer: NodeJS.Timeout | undefined
  let lastFlushAtMs = 0
  const expiries = createExpiryQueue<EventStream>({
    expire: (stream) => endStream(stream, 'expired'),
    isDone: (stream) => stream.ended,
  })
  const unsubscribe = snapshots.onSwap(() => scheduleFlush())

  function scheduleFlush(): void {
    if (closing || flushTimer !== undefined || groups.isEmpty) return
    // At once (after the reload that called us has finished), or when the interval allows.
    const waitMs = Math.max(0, lastFlushAtMs + MIN_FLUSH_INTERVAL_MS - Date.now())
    flushTimer = setTimeout(flush, waitMs)
  }

  function flush(): void {
    flushTimer = undefined
    lastFlushAtMs = Date.now()
    const snapshot = snapshots.current()
    if (snapshot !== undefined) groups.sync(snapshot)
  }

  function write(stream: EventStream, text: string): void {
    if (stream.ended) return
    stream.output.write(text)
    if (stream.output.writableLength > MAX_UNSENT_BYTES) {
      logger.warn(
        { unsentBytes: stream.output.writableLength, app: stream.group.appKey },
        'event stream ended: the client does not read',
      )
      endStream(stream, 'overflow')
      stream.output.destroy()
    }
  }

  function sendShell(stream: EventStream, variantTag: string): void {
    write(stream, formatShellEvent(`${variantTag}.${stream.caller.userTag}`))
    metrics.eventsSent.inc({ event: 'shell' })
  }

  /** Ends the stream once, whatever ended it first. */
  function endStream(stream: EventStream, reason: StreamEndReason): void {
    if (stream.ended) return
    stream.ended = true
    openCount -= 1
    metrics.eventStreams.set(openCount)
    metrics.eventStreamsEnded.inc({ reason })
    if (reason !== 'client' && reason !== 'overflow') stream.output.end()
    if (openCount === 0) {
      clearInterval(keepAliveTimer)
      keepAliveTimer = undefined
    }
  }

  return {
    refusal() {
      return closing ? 'closing' : openCount >= max ? 'full' : undefined
    },

    open(request) {
      const { appKey, response, caller } = request
      const snapshot = snapshots.current()
      // The route checked it (and the app) a moment ago, in the same turn of the event loop.
      if (snapshot === undefined) throw new Error('no snapshot')
      // Its client may have left while the token was being verified: nothing to hold open.
      if (response.destroyed) return
      // Joined in step with the app's other streams: changes not yet sent to them go first.
      const group = groups.groupFor(appKey, snapshot, caller, request.acceptLanguage)
      const stream: EventStream = {
        output: responseOutput(response),
        caller,
        acceptLanguage: request.acceptLanguage,
        group,
        ended: false,
      }
      group.streams.add(stream)
      openCount += 1
      metrics.eventStreams.set(openCount)
      const onClose = () => {
        endStream(stream, 'client')
        groups.leave(stream)
      }
      stream.output.onClose(onClose)
      writeStreamHead(response, request.headers, group.locale)
      // A reconnect that already holds the current tag gets no first event; the comment
      // flushes the headers so the client sees the stream open.
      if (request.lastEventId === `${group.variant.tag}.${caller.userTag}`)
        write(stream, KEEP_ALIVE_COMMENT)
      else sendShell(stream, group.variant.tag)
      takeSocketSoon(stream, response, onClose)
      expiries.add(stream, caller.expiresAtMs)
      keepAliveTimer ??= setInterval(sendKeepAlives, KEEP_ALIVE_MS).unref()
    },

    close() {
      closing = true
      unsubscribe()
      clearTimeout(flushTimer)
      expiries.clear()
      for (const stream of groups.streams()) endStream(stream, 'shutdown')
      groups.clear()
    },
  }

  function sendKeepAlives(): void {
    for (const stream of groups.streams()) write(stream, KEEP_ALIVE_COMMENT)
  }
}

/**
 * The head is on the socket: once the parser is done with the request (a
 * tick later), the stream needs the socket alone. Out here, not in `open`,
 * so that no closure of `open` holds the response: V8 keeps one context for
 * all closures of a call, and the stream's close listener would keep the
 * response, its request and their parser state alive with it.
 */
function takeSocketSoon(stream: EventStream, response: ServerResponse, onClose: () => void): void {
  process.nextTick(() => {
    if (stream.ended) return
    const socket = takeStreamSocket(response)
    if (socket === undefined) return
    stream.output = socket
    socket.onClose(onClose)
  })
}
