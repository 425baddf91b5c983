/**
 * The front end's half of the service's protocol (docs/client.md): the last shell stored across
 * page loads, revalidated, followed live, a token renewed once after a 401, Retry-After honoured.
 * Served as /client/v1/shell-client.js (minified), exported as `shell-data-service/client`; no
 * dependency: it runs wherever `fetch` is, in a browser or on Node 20.
 */
import { createFetchWithToken, readDetail } from './fetch-with-token.js'
import { followHiddenPage } from './hidden-page.js'
import { backoff, readRetryAfter } from './retry-delays.js'
import { findModuleBaseUrl, sendsTagByScript } from './service-location.js'
import { callListener, createError, createReady, INITIAL_STATE } from './shell-state.js'
import { createShellStream } from './shell-stream.js'
import type {
  Shell,
  ShellClient,
  ShellClientOptions,
  ShellFailure,
  ShellListener,
  ShellState,
} from './shell-types.js'
import { findLocalStorage, openStoredShells } from './stored-shells.js'

export type * from './shell-types.js'
export { clearStoredShells } from './stored-shells.js'

/** Longer than a GET takes on any network that works, short enough that a page soon says it is stale. */
const DEFAULT_TIMEOUT_MS = 10_000

/**
 * The revalidation: how the shell shown is confirmed, one GET at a time.
 * - `idle`: the last answer stands until an event, refresh() or the page asks again;
 * - `requesting`: a GET is out;
 * - `announced`: a GET is out, and an event announced another tag meanwhile:
 *   one more follows unless its answer brings that tag;
 * - `again`: a GET is out, and refresh() (or the page shown, a dead stream)
 *   wants one more after it, whatever it brings;
 * - `waiting`: the next GET goes when `timer` fires (a failure that may pass;
 *   at once after a 304 meant for the user shown before);
 * - `stopped`: a 404, `gone` or a second 401: nothing more until refresh();
 * - `closed`: close() was called; for good.
 */
type Revalidation = 'idle' | 'requesting' | 'announced' | 'again' | 'waiting' | 'stopped' | 'closed'

export function createShellClient(options: ShellClientOptions): ShellClient {
  const baseUrl = (options.baseUrl ?? findModuleBaseUrl()).replace(/\/+$/, '')
  const shellUrl = `${baseUrl}/api/v1/shell/${encodeURIComponent(options.appKey)}`
  const locales = [...(options.locales ?? globalThis.navigator?.languages ?? [])]
  const acceptLanguage = locales.join(', ')
  const stored = openStoredShells(
    options.storage === undefined ? findLocalStorage() : options.storage,
    `${baseUrl}|${options.appKey}|${locales.join(',')}`,
  )
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const tagByScript = sendsTagByScript(shellUrl, options)

  let state = INITIAL_STATE
  const listeners = new Set<ShellListener>()
  /** The caller whose shell may be shown and stored: the `sub` option until a token names one. */
  let sub = options.sub
  let ready = createReady()

  let revalidation: Revalidation = 'idle'
  /** The GET out, if any: stopping or closing aborts it, and a GET that is not this one is ignored. */
  let abort: AbortController | undefined
  /** While `waiting`: the next GET. */
  let timer: ReturnType<typeof setTimeout> | undefined
  /** GETs failed in a row, for the backoff. */
  let failures = 0
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
    onGone: () => endAsGone({ status: 404, detail: `the app ${options.appKey} is gone` }),
    onDead: () => revalidate(false),
  })

  if (sub !== undefined) showStored(sub)
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

  /** Every transition of the revalidation; `retryInMs` is for `waiting`. */
  function enter(next: Revalidation, retryInMs = 0): void {
    if (revalidation === 'closed') return
    clearTimeout(timer)
    revalidation = next
    switch (next) {
      case 'requesting':
        abort = new AbortController()
        void requestShell(abort)
        break
      case 'waiting':
        timer = setTimeout(() => enter('requesting'), retryInMs)
        break
      case 'stopped':
      case 'closed':
        // Nothing more is asked: the GET out is aborted, its answer ignored, and the stream ends.
        abort?.abort()
        abort = undefined
        stream.close()
        break
    }
  }

  /**
   * GETs the shell now, or once the GET out is answered. `byEvent`: an event
   * announced another tag, which that answer may already bring.
   */
  function revalidate(byEvent: boolean): void {
    if (revalidation === 'idle' || revalidation === 'waiting') enter('requesting')
    else if (revalidation === 'requesting') enter(byEvent ? 'announced' : 'again')
    else if (revalidation === 'announced' && !byEvent) enter('again')
  }

  /** The GET out, then what follows it; nothing once the client stopped or closed meanwhile. */
  async function requestShell(controller: AbortController): Promise<void> {
    let deadline: ReturnType<typeof setTimeout> | undefined
    const timedOut = new Error(`no answer in ${timeoutMs} ms`)
    // Restarted as each attempt is sent: one that hangs is given up, and the next not queued behind it.
    const startDeadline = () => {
      clearTimeout(deadline)
      deadline = setTimeout(() => controller.abort(timedOut), timeoutMs)
    }
    let retryInMs: number | undefined
    try {
      retryInMs = await fetchShell(controller.signal, startDeadline)
    } catch (error) {
      if (controller !== abort) return
      // Unreachable, or no answer in time (the abort's reason is what the fetch rejects with).
      setState({ stale: true, error: { status: 0, detail: String(error) } })
      retryInMs = backoff(failures++)
    } finally {
      clearTimeout(deadline)
    }
    if (controller !== abort) return
    if (revalidation === 'again' || (revalidation === 'announced' && announcedTag !== state.etag))
      enter('requesting')
    else if (retryInMs === undefined) enter('idle')
    else enter('waiting', retryInMs)
  }

  /** One GET and its answer; returns when to try again after a failure that may pass. */
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
      failures = 0
      sub = shell.user.sub
      stored.write(shell, etag)
      // The HTTP cache's own revalidation answers 200 with what it holds: the shell shown,
      // confirmed. The same object stays, so that nothing is drawn again.
      const shown = etag !== '' && etag === state.etag ? state.shell : shell
      setState({ shell: shown, etag, source: 'network', stale: false, error: null })
      return undefined
    }
    if (status === 304) {
      failures = 0
      // The user changed while the request was out: the 304 was for another shell.
      if (sentTag !== state.etag || state.shell === null) return 0
      stored.write(state.shell, sentTag ?? '')
      setState({ source: 'network', stale: false, error: null })
      return undefined
    }
    const failure = { status, detail: await readDetail(response) }
    if (status === 404) {
      endAsGone(failure)
      return undefined
    }
    setState({ stale: true, error: failure })
    if (status === 503 || status === 429) return readRetryAfter(response) ?? backoff(failures++)
    if (status >= 500) return backoff(failures++)
    // A second 401, or a refusal that asking again cannot change.
    stop(failure)
    return undefined
  }

  /** The app is unknown (404) or gone: no shell, none stored for the caller, nothing until refresh(). */
  function endAsGone(failure: ShellFailure): void {
    if (sub !== undefined) stored.drop(sub)
    setState({ shell: null, etag: null, source: null, error: failure })
    stop(failure)
  }

  /** What the service said will not change by asking again: nothing more until refresh(). */
  function stop(failure: ShellFailure): void {
    enter('stopped')
    // Once a shell came `ready` has resolved, and this changes nothing.
    ready.reject(createError(failure))
  }

  function openStream(): void {
    const stopped = revalidation === 'stopped' || revalidation === 'closed'
    if (options.live !== false && !stopped && !hiddenTooLong) stream.open()
  }

  /** A token naming another user: only that user's shell may be shown. */
  function switchUser(owner: string): void {
    if (owner === sub) return
    sub = owner
    if (state.shell?.user.sub !== owner) showStored(owner)
  }

  /** The caller's stored shell, or none while there is none. */
  function showStored(owner: string): void {
    const shown = stored.read(owner)
    setState({
      shell: shown?.shell ?? null,
      etag: shown?.etag ?? null,
      source: shown === null ? null : 'storage',
      stale: false,
    })
  }

  function setState(changes: Partial<ShellState>): void {
    const merged = { ...state, ...changes }
    const next: ShellState = { ...merged, stale: merged.shell !== null && merged.stale }
    const keys = Object.keys(next) as (keyof ShellState)[]
    if (keys.every((key) => next[key] === state[key])) return
    state = Object.freeze(next)
    if (state.shell !== null) ready.resolve(state)
    for (const listener of listeners) callListener(listener, state)
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
      if (revalidation === 'stopped') {
        failures = 0
        ready = createReady()
        if (state.shell !== null) ready.resolve(state)
        enter('requesting')
      } else {
        revalidate(false)
      }
      openStream()
    },
    close() {
      enter('closed')
      stopFollowingPage()
      ready.reject(createError({ status: 0, detail: 'the client was closed' }))
    },
  }
}

/** An ETag's opaque tag, which is also its event's id (docs/api.md, "Live updates"). */
function unquote(etag: string | null): string {
  return etag?.replace(/^"|"$/g, '') ?? ''
}
