/**
 * What the client and `<shell-frame>` take and give: the shell as the API
 * sends it, the client's state, options and storage. Exported by
 * `shell-data-service/client` with the client.
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

/** The body of `GET /api/v1/shell/{appKey}` (docs/api.md, "Requests and answers"). */
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

/**
 * The part of the Web Storage API the client uses (`localStorage` has it).
 * With `length` and `key`, as a `Storage` has them, the client keeps at most
 * 20 entries in it and `clearStoredShells` can find them all; without, the
 * storage's owner bounds it.
 */
export interface ShellStorage {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
  readonly length?: number
  key?(index: number): string | null
}

/** A storage whose keys can be listed: what `clearStoredShells` needs (`localStorage` is one). */
export interface ListedStorage {
  readonly length: number
  key(index: number): string | null
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
  /** Where the last shell is stored. Default: `localStorage` when there is one; null stores nothing. */
  readonly storage?: ShellStorage | null
  /** Follow the event stream. Default: true. */
  readonly live?: boolean
  /**
   * A GET that has not answered (its body read) this many milliseconds after
   * it was sent is aborted and counts as the service unreachable. Default: 10,000.
   */
  readonly timeoutMs?: number
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
