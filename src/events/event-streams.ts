import { Readable } from 'node:stream'
import type { Logger } from 'pino'
import type { Coding } from '../http/accept-encoding.js'
import { representationTag } from '../http/representation.js'
import type { Metrics, StreamEndReason } from '../metrics.js'
import type { Caller } from '../snapshot/caller.js'
import { buildShellResponse } from '../snapshot/shell-response.js'
import type { AppView, SnapshotSource } from '../snapshot/types.js'
import { formatGoneEvent, formatShellEvent, KEEP_ALIVE_COMMENT } from './sse-text.js'

export interface OpenStreamRequest {
  /** The app's view in the snapshot in service. */
  readonly view: AppView
  readonly caller: Caller
  /** Kept to choose again when the app's languages change. */
  readonly languages: readonly string[]
  /** The coding a GET with the same Accept-Encoding gets: its tag is the events'. */
  readonly coding: Coding
  readonly lastEventId: string | undefined
}

export interface EventStreams {
  /** Why a stream cannot open now, else undefined. */
  refusal(): 'closing' | 'full' | undefined
  /** The stream's body, for the reply to send, its first event in it already. */
  open(request: OpenStreamRequest): Readable
  /** Ends every stream and refuses new ones. */
  close(): void
}

/** Seconds a client is told to wait when the instance has no room for another stream. */
export const STREAMS_FULL_RETRY_AFTER_S = 10
/** Seconds to wait after a shutdown began: by then the load balancer sends the client elsewhere. */
export const CLOSING_RETRY_AFTER_S = 1
/** Below proxies' idle timeouts (60 s is common); the API promises a comment every 15 s. */
const KEEP_ALIVE_MS = 15_000
/**
 * Changes are sent at once, then at most once per this interval while they keep coming: a burst
 * of commits gives a few events with the latest tag, and a change still arrives within a second.
 */
const MIN_FLUSH_INTERVAL_MS = 250
/** Unsent bytes a stream may hold: events are a few hundred, so more means a client not reading. */
const MAX_UNSENT_BYTES = 64 * 1024

interface EventStream extends Pick<OpenStreamRequest, 'caller' | 'languages' | 'coding'> {
  /** The reply's body: what is pushed here goes to the client. */
  readonly output: Readable
  readonly appKey: string
  /** The view key the tag was last taken from: the view would stay alive past the cache's bound. */
  viewKey: string
  tag: string
  expiry: NodeJS.Timeout | undefined
  ended: boolean
}

/**
 * The instance's open event streams, by app. After a reload only streams whose app's view changed
 * take their tag again, and only those whose tag moved are written to.
 */
export function createEventStreams(deps: {
  readonly snapshots: Pick<SnapshotSource, 'current' | 'onSwap'>
  readonly metrics: Metrics
  readonly logger: Logger
  readonly max: number
}): EventStreams {
  const { snapshots, metrics, logger, max } = deps
  const streamsByApp = new Map<string, Set<EventStream>>()
  let openCount = 0
  let closing = false
  let keepAliveTimer: NodeJS.Timeout | undefined
  let flushTimer: NodeJS.Timeout | undefined
  let lastFlushAtMs = 0
  const unsubscribe = snapshots.onSwap(() => scheduleFlush())

  function scheduleFlush(): void {
    if (closing || flushTimer !== undefined || openCount === 0) return
    const waitMs = Math.max(0, lastFlushAtMs + MIN_FLUSH_INTERVAL_MS - Date.now())
    flushTimer = setTimeout(flush, waitMs)
  }

  function flush(): void {
    flushTimer = undefined
    lastFlushAtMs = Date.now()
    const snapshot = snapshots.current()
    if (snapshot === undefined) return
    for (const [appKey, streams] of streamsByApp) {
      const viewKey = snapshot.viewKey(appKey)
      // Made (or found in the cache) only when a stream's view moved.
      let view: AppView | undefined
      for (const stream of streams) {
        if (viewKey === undefined) {
          write(stream, formatGoneEvent(appKey))
          metrics.eventsSent.inc({ event: 'gone' })
          endStream(stream, 'gone')
          continue
        }
        if (stream.viewKey === viewKey) continue
        view ??= snapshot.app(appKey)
        if (view === undefined) continue
        stream.viewKey = viewKey
        const tag = tagOf(view, stream)
        if (tag !== stream.tag) sendShell(stream, tag)
      }
    }
  }

  function write(stream: EventStream, text: string): void {
    if (stream.ended) return
    const { output } = stream
    output.push(text)
    // What the reply has not taken from the body yet: it stops taking when the socket is full.
    const unsentBytes = output.readableLength
    if (unsentBytes > MAX_UNSENT_BYTES) {
      logger.warn(
        { unsentBytes, app: stream.appKey },
        'event stream ended: the client does not read',
      )
      endStream(stream, 'overflow')
      output.destroy()
    }
  }

  function sendShell(stream: EventStream, tag: string): void {
    stream.tag = tag
    write(stream, formatShellEvent(tag))
    metrics.eventsSent.inc({ event: 'shell' })
  }

  function endStream(stream: EventStream, reason: StreamEndReason): void {
    if (stream.ended) return
    stream.ended = true
    clearTimeout(stream.expiry)
    const streams = streamsByApp.get(stream.appKey)
    streams?.delete(stream)
    if (streams?.size === 0) streamsByApp.delete(stream.appKey)
    openCount -= 1
    metrics.eventStreams.set(openCount)
    metrics.eventStreamsEnded.inc({ reason })
    if (reason !== 'client' && reason !== 'overflow') stream.output.push(null)
    if (openCount === 0) {
      clearInterval(keepAliveTimer)
      keepAliveTimer = undefined
    }
  }

  function* allStreams(): Iterable<EventStream> {
    for (const streams of streamsByApp.values()) yield* streams
  }

  return {
    refusal() {
      return closing ? 'closing' : openCount >= max ? 'full' : undefined
    },

    open(request) {
      const { view, caller, languages, coding } = request
      const appKey = view.key
      const output = new Readable({ read() {} })
      const stream: EventStream = {
        output,
        appKey,
        caller,
        languages,
        coding,
        viewKey: view.viewKey,
        tag: '',
        expiry: undefined,
        ended: false,
      }
      const streams = streamsByApp.get(appKey) ?? new Set()
      streamsByApp.set(appKey, streams.add(stream))
      openCount += 1
      metrics.eventStreams.set(openCount)
      // The reply destroys its body when the client leaves.
      output.once('close', () => endStream(stream, 'client'))
      const tag = tagOf(view, stream)
      // A reconnect that already holds the current tag gets no first event; the comment
      // sends the head, so the client sees the stream open.
      if (request.lastEventId === tag) {
        stream.tag = tag
        write(stream, KEEP_ALIVE_COMMENT)
      } else {
        sendShell(stream, tag)
      }
      // Timers cannot wait past 2^31 - 1 ms (24.8 days); no access token lives that long.
      const untilExpiryMs = Math.min(Math.max(caller.expiresAtMs - Date.now(), 0), 2 ** 31 - 1)
      stream.expiry = setTimeout(() => endStream(stream, 'expired'), untilExpiryMs).unref()
      keepAliveTimer ??= setInterval(() => {
        for (const stream of allStreams()) write(stream, KEEP_ALIVE_COMMENT)
      }, KEEP_ALIVE_MS).unref()
      return output
    },

    close() {
      closing = true
      unsubscribe()
      clearTimeout(flushTimer)
      for (const stream of [...allStreams()]) endStream(stream, 'shutdown')
    },
  }
}

/** The ETag (unquoted) a GET of the shell with the stream request's headers would give now. */
function tagOf(view: AppView, { caller, languages, coding }: EventStream): string {
  return representationTag(buildShellResponse(view, caller, view.localeFor(languages)), coding)
}
