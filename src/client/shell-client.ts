/**
 * The front end's half of the shell data service's protocol (README, "For
 * front-end teams"), so that no consuming team writes it again: the last shell
 * kept across page loads, revalidated, followed live over the event stream,
 * a token renewed once after a 401, Retry-After honoured, and the kept shell
 * drawn while the service cannot be reached.
 *
 * Served by the service as /client/v1/shell-client.js (these sources in one
 * minified file) and exported by the package as `shell-data-service/client`.
 * No dependency: it runs wherever `fetch` is, in a browser or on Node 20.
 */
import { createFetchWithToken, readDetail } from './fetch-with-token.js'
import { followHiddenPage } from './hidden-page.js'
import { findLocalStorage, openKeptShells } from './kept-shells.js'
import { createError, createReady } from './ready-promise.js'
import { backoff, readRetryAfter } from './retry-delays.js'
import { findModuleBaseUrl, isCrossOrigin } from './service-location.js'
import { createShellStream } from './shell-stream.js'
import type {
  Shell,
  ShellClient,
  ShellClientOptions,
  ShellFailure,
  ShellListener,
  ShellState,
} from './shell-types.js'

export { clearStoredShells } from './kept-shells.js'
export type * from './shell-types.js'

/** Longer than a GET takes on any network that works, short enough that a page soon says it is stale. */
const DEFAULT_TIMEOUT_MS = 10_000

const INITIAL_STATE: ShellState = Object.freeze({
  shell: null,
  etag: null,
  source: null,
  live: false,
  stale: false,
  error: null,
})

/** What made the client GET again once the request in flight is answered. */
interface Queued {
  refresh: boolean
  event: boolean
}

/**
 * Not in ShellClientOptions, for the bench that compares the ways to
 * revalidate, never for a page: `'tag'` has the script send the shown
 * shell's tag in If-None-Match on every GET, as it does by default where no
 * preflight is at stake.
 */
interface UnlistedOptions {
  readonly revalidateWith?: 'tag'
}

export function createShellClient(options: ShellClientOptions): ShellClient {
  const baseUrl = (options.baseUrl ?? findModuleBaseUrl()).replace(/\/+$/, '')
  const shellUrl = `${baseUrl}/api/v1/shell/${encodeURIComponent(options.appKey)}`
  const locales = [...(options.locales ?? globalThis.navigator?.languages ?? [])]
  const acceptLanguage = locales.join(', ')
  const kept = openKeptShells(
    options.storage === undefined ? findLocalStorage() : options.storage,
    `${baseUrl}|${options.appKey}|${locales.join(',')}`,
  )
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  /**
   * From another origin a tag set by the script costs a CORS preflight on
   * every GET, which Chromium then never takes from its preflight cache; the
   * browser's HTTP cache revalidates with the tag it holds instead, a new
   * token's GET included, at no such cost (README, "Which way to
   * revalidate"). On the page's own origin, and where there is no HTTP cache
   * (Node), the script sends it.
   */
  const tagByScript =
    (options as UnlistedOptions).revalidateWith === 'tag' || !isCrossOrigin(shellUrl)

  let state = INITIAL_STATE
  const listeners = new Set<ShellListener>()
  /** The caller whose shell may be shown and kept: the `sub` option until a token names one. */
  let sub = options.sub
  let closed = false
  /** After a 404, `gone` or a second 401: nothing more until refresh(). */
  let stopped = false
  let ready = createReady()

  let requesting = false
  const queued: Queued = { refresh: false, event: false }
  let requestAbort: AbortController | undefined
  let requestFailures = 0
  let requestTimer: ReturnType<typeof setTimeout> | undefined

  /** The tag the stream announced last. */
  let announcedTag: string | null = null
  /** Hidden for a minute: the stream is given back until the page is shown. */
  let hiddenTooLong = false

  const fetchWithToken = createFetchWithToken(
    options.getToken,
    acceptLanguage,
    switchUser,
    (token) => stream.hearToken(token),
  )
  const stream = createShellStream({
    url: `${shellUrl}/events`,
    fetchWithToken,
    shownTag: () => unquote(state.etag),
    onLive: (live) => setState({ live }),
    onShell(etag) {
      announcedTag = etag
      if (etag !== state.etag) revalidate(true)
    },
    onGone: endAsGone,
    onDead: () => revalidate(false),
  })

  if (sub !== undefined) {
    const shown = kept.read(sub)
    if (shown !== null) setState({ shell: shown.shell, etag: shown.etag, source: 'storage' })
  }
  const stopFollowingPage = followHiddenPage((hiddenLong) => {
    hiddenTooLong = hiddenLong
    if (hiddenLong) {
      stream.close()
    } else {
      revalidate(false)
      openStream()
    }
  })
  revalidate(false)
  openStream()

  function setState(changes: Partial<ShellState>): void {
    const merged = { ...state, ...changes }
    const next: ShellState = { ...merged, stale: merged.shell !== null && merged.stale }
    const keys = Object.keys(next) as (keyof ShellState)[]
    if (keys.every((key) => next[key] === state[key])) return
    state = Object.freeze(next)
    if (state.shell !== null) ready.resolve(state)
    for (const listener of listeners) callListener(listener)
  }

  /** A listener that throws is reported as any event listener's error is, and the others still run. */
  function callListener(listener: ShellListener): void {
    try {
      listener(state)
    } catch (error) {
      queueMicrotask(() => {
        throw error
      })
    }
  }

  /** Stops until refresh(): what the service said will not change by asking again. */
  function stop(failure: ShellFailure): void {
    stopped = true
    clearTimeout(requestTimer)
    stream.close()
    if (state.shell === null) ready.reject(createError(failure))
  }

  function openStream(): void {
    if (options.live !== false && !closed && !stopped && !hiddenTooLong) stream.open()
  }

  // ---- The user ----

  /** A token naming another user: only that user's shell may be shown. */
  function switchUser(owner: string): void {
    if (owner === sub) return
    sub = owner
    if (state.shell?.user.sub === owner) return
    const shown = kept.read(owner)
    setState({
      shell: shown?.shell ?? null,
      etag: shown?.etag ?? null,
      source: shown === null ? null : 'storage',
      stale: false,
    })
  }

  // ---- The shell: one GET in flight at most ----

  /** GETs the shell now, or right after the request in flight when one is. */
  function revalidate(byEvent: boolean): void {
    if (closed || stopped) return
    if (requesting) {
      if (byEvent) queued.event = true
      else queued.refresh = true
      return
    }
    clearTimeout(requestTimer)
    void requestShell()
  }

  async function requestShell(): Promise<void> {
    requesting = true
    queued.refresh = false
    queued.event = false
    const abort = new AbortController()
    requestAbort = abort
    let deadline: ReturnType<typeof setTimeout> | undefined
    // Restarted as each attempt is sent: one that hangs is given up, and the next not queued behind it.
    const startDeadline = () => {
      clearTimeout(deadline)
      deadline = setTimeout(() => abort.abort(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs)
    }
    let retryInMs: number | undefined
    try {
      retryInMs = await fetchShell(abort.signal, startDeadline)
    } catch (error) {
      if (closed) return
      // Unreachable, or no answer in time (the abort's reason is what the fetch rejects with).
      setState({ stale: true, error: { status: 0, detail: String(error) } })
      retryInMs = backoff(requestFailures++)
    } finally {
      clearTimeout(deadline)
      requesting = false
    }
    if (closed || stopped) return
    const again = queued.refresh || (queued.event && announcedTag !== state.etag)
    if (again) revalidate(false)
    else if (retryInMs !== undefined) requestTimer = setTimeout(() => revalidate(false), retryInMs)
  }

  /** One revalidation; returns when to try again after a failure that may pass. */
  async function fetchShell(
    signal: AbortSignal,
    startDeadline: () => void,
  ): Promise<number | undefined> {
    let sentTag: string | null = null
    const response = await fetchWithToken(
      shellUrl,
      () => {
        startDeadline()
        sentTag = tagByScript ? state.etag : null
        return { 'if-none-match': sentTag }
      },
      signal,
    )
    const { status } = response
    if (status === 200) {
      const shell = (await response.json()) as Shell
      const etag = response.headers.get('etag') ?? ''
      requestFailures = 0
      sub = shell.user.sub
      kept.write(shell, etag)
      // The HTTP cache's own revalidation answers 200 with what it holds: the shell shown,
      // confirmed. The same object stays, so that nothing is drawn again.
      const shown = etag !== '' && etag === state.etag ? state.shell : shell
      setState({ shell: shown, etag, source: 'network', stale: false, error: null })
      return undefined
    }
    if (status === 304) {
      requestFailures = 0
      // The user changed while the request was out: the 304 was for another shell.
      if (sentTag !== state.etag || state.shell === null) return 0
      kept.write(state.shell, sentTag ?? '')
      setState({ source: 'network', stale: false, error: null })
      return undefined
    }
    const failure = { status, detail: await readDetail(response) }
    if (status === 404) {
      if (sub !== undefined) kept.drop(sub)
      setState({ shell: null, etag: null, source: null, error: failure })
      stop(failure)
      return undefined
    }
    setState({ stale: true, error: failure })
    if (status === 503 || status === 429)
      return readRetryAfter(response) ?? backoff(requestFailures++)
    if (status >= 500) return backoff(requestFailures++)
    // A second 401, or a refusal that asking again cannot change.
    stop(failure)
    return undefined
  }

  function endAsGone(): void {
    const failure = { status: 404, detail: `the app ${options.appKey} is gone` }
    if (sub !== undefined) kept.drop(sub)
    setState({ shell: null, etag: null, source: null, error: failure })
    stop(failure)
  }

  return {
    get state() {
      return state
    },
    get ready() {
      return ready.promise
    },
    subscribe(listener) {
      listener(state)
      listeners.add(listener)
      return () => {
        listeners.delete(listener)
      }
    },
    refresh() {
      if (closed) return
      if (stopped) {
        stopped = false
        requestFailures = 0
        ready = createReady()
        if (state.shell !== null) ready.resolve(state)
      }
      revalidate(false)
      openStream()
    },
    close() {
      if (closed) return
      closed = true
      stopFollowingPage()
      clearTimeout(requestTimer)
      requestAbort?.abort()
      stream.close()
      ready.reject(createError({ status: 0, detail: 'the shell client was closed' }))
    },
  }
}

/** An ETag's opaque tag, which is also its event's id (README, "Live updates"). */
function unquote(etag: string | null): string {
  return etag?.replace(/^"|"$/g, '') ?? ''
}
