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
  /** GETs with the caller's token (after a 401, once more with a renewed one); `headers` is read with the token. */
  fetchWithToken(
    url: string,
    headers: (token: string) => Record<string, string>,
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
  /** Opens the stream now, unless it is open or opening: a `refused` one too (`refresh()`). */
  open(): void
  close(): void
  /** A token the client got: a `refused` stream opens again when it is not the refused one. */
  hearToken(token: string): void
}

/**
 * `opening`: the request is out; `open`: events are read; `waiting`: to be
 * reopened when `timer` fires; `refused`: a renewed token was refused too
 * (`401` twice in a row), so no reopening, which would only renew tokens in
 * a loop, until `open()` or another token. While opening or open `timer` is
 * the watchdog, reset by every chunk.
 */
type StreamState = 'closed' | 'opening' | 'open' | 'waiting' | 'refused'

export function createShellStream(deps: ShellStreamDeps): ShellStream {
  let state: StreamState = 'closed'
  let abort = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  let failures = 0
  let lastEventId = ''
  /** The token of the stream's last attempt; while `refused`, the one refused. */
  let sentToken = ''

  /** Every transition; `reopenInMs` is for `waiting`. Live while `open` only. */
  function enter(next: StreamState, reopenInMs = 0): void {
    clearTimeout(timer)
    state = next
    deps.onLive(next === 'open')
    switch (next) {
      case 'closed':
        abort.abort()
        failures = 0
        break
      case 'opening':
        abort = new AbortController()
        hear()
        void follow(abort.signal)
        break
      case 'open':
        hear()
        break
      case 'waiting':
        timer = setTimeout(() => enter('opening'), reopenInMs)
        break
    }
  }

  function takeForDead(): void {
    abort.abort()
    enter('opening')
    deps.onDead()
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
        (token) => {
          sentToken = token
          return { accept: 'text/event-stream', 'last-event-id': lastEventId || deps.shownTag() }
        },
        signal,
      )
      if (signal.aborted) return
      if (response.status === 404) return deps.onGone()
      // The renewed token refused too (fetchWithToken renews once): reopening would renew in a loop.
      if (response.status === 401) return enter('refused')
      if (response.ok && response.body !== null) {
        enter('open')
        await readEvents(response.body, takeEvent, hear)
        // Ended by the service (a shutdown, the token's exp): back soon, with a fresh token.
        if (Date.now() - openedAt < SHORTEST_STREAM_MS) {
          reopenInMs = backoff(failures++)
        } else {
          failures = 0
          reopenInMs = spreadReopening()
        }
      } else {
        await response.arrayBuffer()
        const busy = response.status === 503 || response.status === 429
        reopenInMs = (busy && readRetryAfter(response)) || backoff(failures++)
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
    // Data that is not JSON is dropped: the next event, or a revalidation, brings the tag.
    if (type === 'shell') {
      try {
        deps.onShell((JSON.parse(data) as { etag: string }).etag)
      } catch {}
    }
  }

  return {
    open() {
      if (state !== 'opening' && state !== 'open') enter('opening')
    },
    close() {
      if (state !== 'closed') enter('closed')
    },
    hearToken(token) {
      if (state === 'refused' && token !== sentToken) enter('opening')
    },
  }
}
