import { PassThrough } from 'node:stream'
import type { Logger } from 'pino'
import type { VerifiedCaller } from '../auth/verify-token.js'
import type { Metrics, StreamEndReason } from '../metrics.js'
import type { SnapshotSource } from '../snapshot/types.js'
import { createExpiryQueue } from './expiry-queue.js'
import { formatGoneEvent, formatShellEvent, KEEP_ALIVE_COMMENT } from './sse-text.js'
import { createStreamGroups, type EventStream } from './stream-groups.js'

export interface OpenStreamRequest {
  readonly appKey: string
  readonly caller: VerifiedCaller
  readonly acceptLanguage: string | undefined
  readonly lastEventId: string | undefined
}

export interface EventStreams {
  /** Why a stream cannot open now (shutting down, or the limit reached), else undefined. */
  refusal(): 'closing' | 'full' | undefined
  /**
   * Starts a stream on the app of the snapshot in service: its body, for the
   * reply to send (its first event is in it already), and its language.
   */
  open(request: OpenStreamRequest): { readonly body: PassThrough; readonly locale: string }
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
  readonly snapshots: Pick<SnapshotSource, 'current' | 'onSwap'>
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
    const { output } = stream
    output.write(text)
    // What the reply has not taken from the stream yet: it stops taking when the socket is full.
    const unsentBytes = output.readableLength + output.writableLength
    if (unsentBytes > MAX_UNSENT_BYTES) {
      logger.warn(
        { unsentBytes, app: stream.group.appKey },
        'event stream ended: the client does not read',
      )
      endStream(stream, 'overflow')
      output.destroy()
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
      const { appKey, caller } = request
      const snapshot = snapshots.current()
      // The route checked it (and the app) a moment ago, in the same turn of the event loop.
      if (snapshot === undefined) throw new Error('no snapshot')
      // Joined in step with the app's other streams: changes not yet sent to them go first.
      const group = groups.groupFor(appKey, snapshot, caller, request.acceptLanguage)
      const output = new PassThrough()
      const stream: EventStream = {
        output,
        caller,
        acceptLanguage: request.acceptLanguage,
        group,
        ended: false,
      }
      group.streams.add(stream)
      openCount += 1
      metrics.eventStreams.set(openCount)
      // The reply destroys its body when the client leaves; ended by us, it closes too.
      output.once('close', () => {
        endStream(stream, 'client')
        groups.leave(stream)
      })
      // A reconnect that already holds the current tag gets no first event; the comment
      // sends the head, so the client sees the stream open.
      if (request.lastEventId === `${group.variant.tag}.${caller.userTag}`)
        write(stream, KEEP_ALIVE_COMMENT)
      else sendShell(stream, group.variant.tag)
      expiries.add(stream, caller.expiresAtMs)
      keepAliveTimer ??= setInterval(sendKeepAlives, KEEP_ALIVE_MS).unref()
      return { body: output, locale: group.locale }
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
