/**
 * A client's event stream (README, "Live updates"): opened by `fetch`, read
 * as server-sent events, reopened with `Last-Event-ID` when it ends or fails,
 * and taken for dead when nothing, not even a keep-alive comment, arrives for
 * SILENT_STREAM_MS.
 */
import { readEvents } from './read-events.js'
import { backoff, readRetryAfter, spreadReopening } from './retry-delays.js'

/**
 * The service sends a comment at least every 15 s: three missed mean a
 * stream that will never speak again (a laptop that slept, a network that
 * changed under a half-open connection), however `live` it looks.
 */
const SILENT_STREAM_MS = 45_000
/**
 * A stream that ends sooner than this after it opened counts as failed: a
 * proxy that cuts every stream must not make the client reopen in a loop.
 */
const SHORTEST_STREAM_MS = 1_000

export interface ShellStreamDeps {
  /** The events' URL. */
  readonly url: string
  /** GETs with the caller's token (after a 401, once more with a renewed one); `headers` is read after the token. */
  fetchWithToken(
    url: string,
    headers: () => Record<string, string>,
    signal: AbortSignal,
  ): Promise<Response>
  /** The tag of the shell shown, sent as Last-Event-ID before any event came. */
  shownTag(): string
  onLive(live: boolean): void
  /** A `shell` event: the caller's tag now. */
  onShell(etag: string): void
  /** The app is gone (`event: gone`, or a 404). */
  onGone(): void
  /** The stream was taken for dead: what it missed must be asked for. */
  onDead(): void
}

export interface ShellStream {
  /** Opens the stream now, unless it is open or opening. */
  open(): void
  close(): void
}

/**
 * `opening`: the request is out; `open`: events are read; `waiting`: to be
 * reopened when `timer` fires. While opening or open `timer` is the
 * watchdog, reset by every chunk.
 */
type StreamState = 'closed' | 'opening' | 'open' | 'waiting'

export function createShellStream(deps: ShellStreamDeps): ShellStream {
  let state: StreamState = 'closed'
  let abort = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  let lastEventId = ''

  /** Every transition; `reopenInMs` is for `waiting`. */
  function enter(next: StreamState, reopenInMs = 0): void {
    clearTimeout(timer)
    state = next
    switch (next) {
      case 'closed':
        abort.abort()
        failures = 0
        deps.onLive(false)
        break
      case 'opening':
        abort = new AbortController()
        hear()
        void follow(abort.signal)
        break
      case 'open':
        deps.onLive(true)
        hear()
        break
      case 'waiting':
        deps.onLive(false)
        timer = setTimeout(() => enter('opening'), reopenInMs)
        break
    }
  }

  function takeForDead(): void {
    abort.abort()
    deps.onLive(false)
    deps.onDead()
    enter('opening')
  }

  /** The stream is alive for another SILENT_STREAM_MS: it opens, opened, or a chunk arrived. */
  function hear(): void {
    clearTimeout(timer)
    timer = setTimeout(takeForDead, SILENT_STREAM_MS)
  }

  async function follow(signal: AbortSignal): Promise<void> {
    const openedAt = Date.now()
    let reopenInMs: number
    try {
      const response = await deps.fetchWithToken(
        deps.url,
        // Before any event, the tag of the shell shown (a stored one, say): the service then
        // sends no first event unless the shell has changed since.
        () => ({ accept: 'text/event-stream', 'last-event-id': lastEventId || deps.shownTag() }),
        signal,
      )
      if (signal.aborted) return
      if (response.status === 404) {
        deps.onGone()
        return
      }
      if (response.ok && response.body !== null) {
        enter('open')
        await readEvents(response.body, takeEvent, hear)
        // Ended by the service (a shutdown, the token's exp): back soon, with a fresh token.
        const lasted = Date.now() - openedAt >= SHORTEST_STREAM_MS
        if (lasted) failures = 0
        reopenInMs = lasted ? spreadReopening() : backoff(failures++)
      } else {
        await response.arrayBuffer()
        const busy = response.status === 503 || response.status === 429
        reopenInMs = (busy ? readRetryAfter(response) : undefined) ?? backoff(failures++)
      }
    } catch {
      // Closed or taken for dead: whoever aborted it decides what follows.
      if (signal.aborted) return
      reopenInMs = backoff(failures++)
    }
    if (signal.aborted) return
    enter('waiting', reopenInMs)
  }

  function takeEvent(type: string, data: string, id: string): void {
    lastEventId = id
    if (type === 'gone') deps.onGone()
    if (type !== 'shell') return
    let etag: string
    try {
      etag = (JSON.parse(data) as { etag: string }).etag
    } catch {
      return
    }
    deps.onShell(etag)
  }

  return {
    open() {
      if (state === 'closed' || state === 'waiting') enter('opening')
    },
    close() {
      if (state !== 'closed') enter('closed')
    },
  }
}
