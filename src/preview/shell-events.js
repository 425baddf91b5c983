import { createSseParser } from './sse-parser.js'

/** Waits after a dropped stream, doubling from the first to the last, with jitter. */
const FIRST_RETRY_MS = 1_000
const LAST_RETRY_MS = 30_000

/**
 * Follows `GET /api/v1/shell/{appKey}/events` until `signal` aborts: calls
 * `onShell(etag)` for each `shell` event, `onGone()` when the app is deleted,
 * and `onLive(true|false)` as the stream opens and drops. A stream the server
 * ends (the token's `exp`, a restart) is reopened at once with a fresh token
 * and `Last-Event-ID`; a dropped one after a back-off.
 */
export async function followShellEvents({
  appKey,
  locale,
  getToken,
  onShell,
  onGone,
  onLive,
  signal,
}) {
  let lastEventId = ''
  let retryMs = FIRST_RETRY_MS
  let refused = false
  while (!signal.aborted) {
    try {
      const token = await getToken({ fresh: refused })
      const response = await fetch(`/api/v1/shell/${encodeURIComponent(appKey)}/events`, {
        headers: {
          authorization: `Bearer ${token}`,
          'accept-language': locale,
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
        cache: 'no-store',
        signal,
      })
      // A refused token (expired, or signed by a key since replaced): once more with a new one.
      if (response.status === 401 && !refused) {
        refused = true
        continue
      }
      refused = false
      if (response.status === 404) return onGone()
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      onLive(true)
      retryMs = FIRST_RETRY_MS
      let gone = false
      const feed = createSseParser((event) => {
        if (event.event === 'shell') {
          lastEventId = event.id
          onShell(JSON.parse(event.data).etag)
        } else if (event.event === 'gone') gone = true
      })
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        feed(chunk.value)
      onLive(false)
      if (gone) return onGone()
    } catch {
      if (signal.aborted) return
      onLive(false)
      await sleep(retryMs * (0.5 + Math.random()), signal)
      retryMs = Math.min(retryMs * 2, LAST_RETRY_MS)
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        resolve()
      },
      { once: true },
    )
  })
}
