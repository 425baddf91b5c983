/**
 * The front end's half of the shell data service's protocol (README, "For
 * front-end teams"), so that no consuming team writes it again: the last shell
 * kept across page loads, revalidated with If-None-Match, followed live over
 * the event stream, a token renewed once after a 401, Retry-After honoured,
 * and the kept shell drawn while the service cannot be reached.
 *
 * Served by the service as /client/v1/shell-client.js and exported by the
 * package as `shell-data-service/client`. No imports and no dependency: it
 * runs wherever `fetch` is, in a browser or on Node 20.
 */

/** The four places of the frame a menu item can live in. */
export type ShellZone = 'topbar' | 'sidebar' | 'footer' | 'user-menu'

/** A menu item as `GET /api/v1/shell/{appKey}` sends it. */
export interface ShellMenuItem {
  readonly id: string
  readonly kind: 'link' | 'search' | 'action'
  readonly label: string
  readonly icon: string | null
  readonly href: string | null
  readonly external: boolean
  readonly children: readonly ShellMenuItem[]
}

/** The body of `GET /api/v1/shell/{appKey}` (README, "HTTP API"). */
export interface Shell {
  readonly app: {
    readonly key: string
    readonly name: string
    readonly description: string | null
    readonly homeUrl: string | null
  }
  readonly branding: {
    readonly productName: string
    readonly logoUrl: string | null
    readonly faviconUrl: string | null
    readonly primaryColor: string | null
    readonly accentColor: string | null
    readonly footerText: string | null
    readonly theme: Readonly<Record<string, unknown>>
  }
  readonly user: {
    readonly sub: string
    readonly username: string | null
    readonly name: string | null
    readonly email: string | null
    readonly roles: readonly string[]
  }
  readonly menus: Readonly<Record<ShellZone, readonly ShellMenuItem[]>>
  /** The language the labels are in, chosen from `locales`. */
  readonly locale: string
}

/** The last failure of a GET; `status` 0 when the service could not be reached. */
export interface ShellFailure {
  readonly status: number
  readonly detail: string
}

export interface ShellState {
  /** The shell shown; null while none is known. */
  readonly shell: Shell | null
  /** The ETag the service sent with it (that of the coding the runtime got). */
  readonly etag: string | null
  /** Where the shell came from; null while there is none. */
  readonly source: 'storage' | 'network' | null
  /** The event stream is open. A failing stream shows here, not in `error`. */
  readonly live: boolean
  /** A shell is shown that the service could not confirm; false without a shell. */
  readonly stale: boolean
  /** The last failure of a GET; null again after the next success. */
  readonly error: ShellFailure | null
}

/** What `ready` rejects with when the client stops without a shell. */
export interface ShellClientError extends Error {
  /** The state's `error.status`; 0 after `close()`. */
  readonly status: number
}

/** The part of the Web Storage API the client uses (`localStorage` has it). */
export interface ShellStorage {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/**
 * Returns the caller's access token. `renew` is true after the service
 * refused the last one (a 401): return a fresh one then, not a cached one.
 */
export type GetToken = (context: { readonly renew: boolean }) => string | Promise<string>

export interface ShellClientOptions {
  /** The app whose frame to draw, as registered (`crm`). */
  readonly appKey: string
  readonly getToken: GetToken
  /**
   * The caller's user id, when the page knows it before it has a token: the
   * first state can then come from storage before `getToken` answers.
   */
  readonly sub?: string
  /** Default: where this module was loaded from, less its `/client/v1/...` path. */
  readonly baseUrl?: string
  /** Sent as Accept-Language, in this order. Default: `navigator.languages`. */
  readonly locales?: readonly string[]
  /** Where the last shell is kept. Default: `localStorage` when there is one; null keeps nothing. */
  readonly storage?: ShellStorage | null
  /** Follow the event stream. Default: true. */
  readonly live?: boolean
}

export type ShellListener = (state: ShellState) => void

export interface ShellClient {
  /** The current state, a new frozen object at each change. */
  readonly state: ShellState
  /** Calls `listener` at once with `state`, then at each change; returns the unsubscribe. */
  subscribe(listener: ShellListener): () => void
  /**
   * The first state with a shell. Rejects with a ShellClientError when the
   * client stops without one (unknown app, a second 401, `close()`); a
   * `refresh()` that starts a stopped client again gives a new promise.
   */
  readonly ready: Promise<ShellState>
  /** Revalidates now; starts the client again after a 404, `gone` or a second 401. */
  refresh(): void
  /** Ends the stream, every timer and every request. */
  close(): void
}

/**
 * A kept shell older than this is dropped rather than shown: a week covers a
 * weekend and a short leave, and a frame that old has likely changed.
 */
const KEPT_MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000
/** Retries after a failure wait 1 s, 2 s, 4 s... up to 30 s, with jitter (README, "For front-end teams"). */
const FIRST_RETRY_MS = 1_000
const LAST_RETRY_MS = 30_000
/** A Retry-After longer than this is cut to it (README, "For front-end teams"). */
const MAX_RETRY_AFTER_MS = 60_000
/** A page hidden this long gives its stream back; it comes back when the page is shown. */
const HIDDEN_STREAM_MS = 60_000
/**
 * A stream that ends sooner than this after it opened counts as failed: a
 * proxy that cuts every stream must not make the client reopen in a loop.
 */
const SHORTEST_STREAM_MS = 1_000
/** Versioned, so that a later client with another format reads none of this one's entries. */
const STORAGE_PREFIX = 'shell-data:v1:'

const INITIAL_STATE: ShellState = Object.freeze({
  shell: null,
  etag: null,
  source: null,
  live: false,
  stale: false,
  error: null,
})

/** A shell in storage, with its tag and when the service last confirmed it. */
interface KeptShell {
  readonly shell: Shell
  readonly etag: string
  readonly savedAt: number
}

/** What made the client GET again once the request in flight is answered. */
interface Queued {
  refresh: boolean
  event: boolean
}

export function createShellClient(options: ShellClientOptions): ShellClient {
  const baseUrl = (options.baseUrl ?? findModuleBaseUrl()).replace(/\/+$/, '')
  const shellUrl = `${baseUrl}/api/v1/shell/${encodeURIComponent(options.appKey)}`
  const locales = [...(options.locales ?? globalThis.navigator?.languages ?? [])]
  const storage = options.storage === undefined ? findLocalStorage() : options.storage
  const live = options.live ?? true
  const page = globalThis.document as Document | undefined
  const keyPrefix = `${STORAGE_PREFIX}${baseUrl}|${options.appKey}|${locales.join(',')}|`

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

  let streamAbort: AbortController | undefined
  let streamFailures = 0
  let streamTimer: ReturnType<typeof setTimeout> | undefined
  let lastEventId = ''
  /** The tag the stream announced last. */
  let announcedTag: string | null = null
  let hiddenTimer: ReturnType<typeof setTimeout> | undefined
  let hiddenTooLong = false

  if (sub !== undefined) {
    const kept = readKept(sub)
    if (kept !== null) setState({ shell: kept.shell, etag: kept.etag, source: 'storage' })
  }
  page?.addEventListener('visibilitychange', followVisibility)
  followVisibility()
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

  function createReady() {
    let settle = { resolve: (_state: ShellState) => {}, reject: (_error: Error) => {} }
    const promise = new Promise<ShellState>((resolve, reject) => {
      settle = { resolve, reject }
    })
    // Nobody has to await it: a rejection no one listens to must not be reported as unhandled.
    promise.catch(() => {})
    return { promise, ...settle }
  }

  /** Stops until refresh(): what the service said will not change by asking again. */
  function stop(failure: ShellFailure): void {
    stopped = true
    clearTimeout(requestTimer)
    closeStream()
    if (state.shell === null) ready.reject(createError(failure))
  }

  // ---- Storage: the last shell of each caller, service, app and languages ----

  function storageKey(owner: string): string {
    return keyPrefix + hashSub(owner)
  }

  function readKept(owner: string): KeptShell | null {
    try {
      const text = storage?.getItem(storageKey(owner))
      if (text == null) return null
      const kept = JSON.parse(text) as KeptShell
      // The owner check makes the hash's collisions harmless: never another user's shell.
      if (Date.now() - kept.savedAt < KEPT_MAX_AGE_MS && kept.shell.user.sub === owner) return kept
      storage?.removeItem(storageKey(owner))
    } catch {
      // A storage that throws (quota, private mode) or holds garbage counts as none.
    }
    return null
  }

  function writeKept(shell: Shell, etag: string): void {
    try {
      const kept: KeptShell = { shell, etag, savedAt: Date.now() }
      storage?.setItem(storageKey(shell.user.sub), JSON.stringify(kept))
    } catch {}
  }

  function dropKept(): void {
    try {
      if (sub !== undefined) storage?.removeItem(storageKey(sub))
    } catch {}
  }

  // ---- Tokens ----

  /** A token from the page; once one names its user, only that user's shell may be shown. */
  async function readToken(renew: boolean): Promise<string> {
    const token = await options.getToken({ renew })
    const owner = readTokenSub(token)
    if (owner !== undefined && owner !== sub) switchUser(owner)
    return token
  }

  function switchUser(owner: string): void {
    sub = owner
    if (state.shell !== null && state.shell.user.sub === owner) return
    const kept = readKept(owner)
    setState({
      shell: kept?.shell ?? null,
      etag: kept?.etag ?? null,
      source: kept === null ? null : 'storage',
      stale: false,
    })
  }

  /**
   * GETs `url` with the token and the languages; after a 401, once more with
   * a renewed token. `headers` is read after the token, which may change
   * the user and with them the tag to revalidate.
   */
  async function fetchWithToken(
    url: string,
    headers: () => Record<string, string | null>,
    signal: AbortSignal,
  ): Promise<Response> {
    for (let renew = false; ; renew = true) {
      const token = await readToken(renew)
      const sent: Record<string, string> = { authorization: `Bearer ${token}` }
      if (locales.length > 0) sent['accept-language'] = locales.join(', ')
      for (const [name, value] of Object.entries(headers())) if (value) sent[name] = value
      // The default cache mode: a request that carries If-None-Match passes the browser's
      // cache by (its 304 comes to the client), and any other mode would keep Chromium from
      // reusing the stream's CORS preflight.
      const response = await fetch(url, { headers: sent, signal })
      if (response.status !== 401 || renew) return response
      // Read to its end, so that the connection can carry the next request.
      await response.arrayBuffer()
    }
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
    let retryInMs: number | undefined
    try {
      retryInMs = await fetchShell(abort.signal)
    } catch (error) {
      if (closed) return
      setState({ stale: true, error: { status: 0, detail: describeError(error) } })
      retryInMs = backoff(requestFailures++)
    } finally {
      requesting = false
    }
    if (closed || stopped) return
    const again = queued.refresh || (queued.event && announcedTag !== state.etag)
    if (again) revalidate(false)
    else if (retryInMs !== undefined) requestTimer = setTimeout(() => revalidate(false), retryInMs)
  }

  /** One revalidation; returns when to try again after a failure that may pass. */
  async function fetchShell(signal: AbortSignal): Promise<number | undefined> {
    let sentTag: string | null = null
    const response = await fetchWithToken(
      shellUrl,
      () => {
        sentTag = state.etag
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
      writeKept(shell, etag)
      setState({ shell, etag, source: 'network', stale: false, error: null })
      return undefined
    }
    if (status === 304) {
      requestFailures = 0
      // The user changed while the request was out: the 304 was for another shell.
      if (sentTag !== state.etag || state.shell === null) return 0
      writeKept(state.shell, sentTag ?? '')
      setState({ source: 'network', stale: false, error: null })
      return undefined
    }
    const failure = { status, detail: await readDetail(response) }
    if (status === 404) {
      dropKept()
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

  // ---- The event stream ----

  function openStream(): void {
    if (!live || closed || stopped || hiddenTooLong || streamAbort !== undefined) return
    clearTimeout(streamTimer)
    void followStream()
  }

  function closeStream(): void {
    clearTimeout(streamTimer)
    streamAbort?.abort()
    streamAbort = undefined
    setState({ live: false })
  }

  async function followStream(): Promise<void> {
    const abort = new AbortController()
    streamAbort = abort
    const openedAt = Date.now()
    let retryInMs: number
    try {
      const response = await fetchWithToken(
        `${shellUrl}/events`,
        // Before any event, the tag of the shell shown (a stored one, say): the service then
        // sends no first event unless the shell has changed since.
        () => ({
          accept: 'text/event-stream',
          'last-event-id': lastEventId || unquote(state.etag),
        }),
        abort.signal,
      )
      if (response.status === 404) {
        endAsGone()
        return
      }
      if (response.ok && response.body !== null) {
        setState({ live: true })
        await readEvents(response.body, takeEvent)
        // Ended by the service (shutdown, the token's exp): back at once, with a fresh token.
        const lasted = Date.now() - openedAt >= SHORTEST_STREAM_MS
        if (lasted) streamFailures = 0
        retryInMs = lasted ? 0 : backoff(streamFailures++)
      } else {
        await response.arrayBuffer()
        const busy = response.status === 503 || response.status === 429
        retryInMs = (busy ? readRetryAfter(response) : undefined) ?? backoff(streamFailures++)
      }
    } catch {
      retryInMs = backoff(streamFailures++)
    }
    // Closed on purpose (close(), a stop, a hidden page): whoever closed it decides what follows.
    if (abort.signal.aborted) return
    streamAbort = undefined
    setState({ live: false })
    streamTimer = setTimeout(openStream, retryInMs)
  }

  function takeEvent(type: string, data: string, id: string): void {
    lastEventId = id
    if (type === 'gone') {
      endAsGone()
      return
    }
    if (type !== 'shell') return
    try {
      announcedTag = (JSON.parse(data) as { etag: string }).etag
    } catch {
      return
    }
    if (announcedTag !== state.etag) revalidate(true)
  }

  function endAsGone(): void {
    const failure = { status: 404, detail: `the app ${options.appKey} is gone` }
    dropKept()
    setState({ shell: null, etag: null, source: null, error: failure })
    stop(failure)
  }

  // ---- A hidden page ----

  function followVisibility(): void {
    if (page === undefined || closed) return
    clearTimeout(hiddenTimer)
    if (page.visibilityState === 'hidden') {
      hiddenTimer = setTimeout(() => {
        hiddenTooLong = true
        closeStream()
      }, HIDDEN_STREAM_MS)
    } else if (hiddenTooLong) {
      hiddenTooLong = false
      revalidate(false)
      openStream()
    }
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
        streamFailures = 0
        ready = createReady()
        if (state.shell !== null) ready.resolve(state)
      }
      revalidate(false)
      openStream()
    },
    close() {
      if (closed) return
      closed = true
      page?.removeEventListener('visibilitychange', followVisibility)
      clearTimeout(hiddenTimer)
      clearTimeout(requestTimer)
      requestAbort?.abort()
      closeStream()
      ready.reject(createError({ status: 0, detail: 'the shell client was closed' }))
    },
  }
}

/**
 * Reads a text/event-stream body (the HTML standard's server-sent events)
 * and calls `onEvent` for each event with data. A fetch, since EventSource
 * cannot send Authorization. Resolves when the body ends.
 */
async function readEvents(
  body: ReadableStream<Uint8Array>,
  onEvent: (type: string, data: string, id: string) => void,
): Promise<void> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let pending = ''
  let type = ''
  let data: string[] = []
  let id = ''
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    // A line ends at CRLF, LF or CR; a CR last in the chunk may be half of a CRLF.
    const text = pending + decoder.decode(chunk.value, { stream: true })
    const lines = text.split(/\r\n|\n|\r(?!$)/)
    pending = lines.pop() ?? ''
    for (const line of lines) {
      if (line === '') {
        if (data.length > 0) onEvent(type || 'message', data.join('\n'), id)
        type = ''
        data = []
        continue
      }
      const colon = line.indexOf(':')
      // A line that starts with a colon is a comment (the keep-alive).
      if (colon === 0) continue
      const field = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (field === 'event') type = value
      else if (field === 'data') data.push(value)
      else if (field === 'id' && !value.includes('\0')) id = value
    }
  }
}

/** Where the service is when this module came from it: its URL less `/client/v1/...`. */
function findModuleBaseUrl(): string {
  const url = new URL(import.meta.url)
  const at = url.pathname.lastIndexOf('/client/v1/')
  if (at < 0 || !url.protocol.startsWith('http')) {
    throw new TypeError('createShellClient: baseUrl is required when the module is bundled')
  }
  return url.origin + url.pathname.slice(0, at)
}

/** `localStorage` where there is one; reading it throws in some sandboxed frames. */
function findLocalStorage(): ShellStorage | null {
  try {
    return globalThis.localStorage ?? null
  } catch {
    return null
  }
}

/**
 * The `sub` claim of a JWT's payload, read, not verified: it only picks the
 * stored shell, and the service checks the token on every request.
 */
function readTokenSub(token: string): string | undefined {
  try {
    const payload = (token.split('.')[1] ?? '').replace(/-/g, '+').replace(/_/g, '/')
    const bytes = Uint8Array.from(atob(payload), (char) => char.charCodeAt(0))
    const { sub } = JSON.parse(new TextDecoder().decode(bytes)) as { sub?: unknown }
    return typeof sub === 'string' ? sub : undefined
  } catch {
    return undefined
  }
}

/**
 * 53 bits of cyrb53 over the user id, so that storage keys do not spell it
 * out. Not SHA-256: the first state needs the key at once, and
 * crypto.subtle only answers later. Collisions cannot show another user's
 * shell: a kept shell is shown only when its `user.sub` is the caller's.
 */
function hashSub(text: string): string {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let index = 0; index < text.length; index += 1) {
    const code = text.charCodeAt(index)
    h1 = Math.imul(h1 ^ code, 2654435761)
    h2 = Math.imul(h2 ^ code, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)
}

/** The wait before the next try after `failures` failures in a row: doubling, capped, jittered. */
function backoff(failures: number): number {
  const ceiling = Math.min(LAST_RETRY_MS, FIRST_RETRY_MS * 2 ** failures)
  return Math.max(FIRST_RETRY_MS, ceiling * (0.5 + Math.random() / 2))
}

/**
 * Retry-After in seconds or as a date, at most 60 s; at least 1 s, so that a
 * service saying 0 again and again is not asked in a loop.
 */
function readRetryAfter(response: Response): number | undefined {
  const value = response.headers.get('retry-after')?.trim()
  if (!value) return undefined
  const ms = /^\d+$/.test(value) ? Number(value) * 1000 : Date.parse(value) - Date.now()
  if (Number.isNaN(ms)) return undefined
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(FIRST_RETRY_MS, ms))
}

/** A problem's `detail` (RFC 9457), else the status. */
async function readDetail(response: Response): Promise<string> {
  try {
    const { detail } = (await response.json()) as { detail?: unknown }
    if (typeof detail === 'string') return detail
  } catch {}
  return `HTTP ${response.status}`
}

/** An ETag's opaque tag, which is also its event's id (README, "Live updates"). */
function unquote(etag: string | null): string {
  return etag?.replace(/^"|"$/g, '') ?? ''
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

function createError(failure: ShellFailure): ShellClientError {
  return Object.assign(new Error(failure.detail), { status: failure.status })
}
