/**
 * The service as the preview page reads it: tokens from the local issuer for
 * the chosen user id and roles, then the public API with them, as any
 * consumer would.
 */

/** The local-mode helpers answer only requests that carry it, which no other site's page can send. */
const LOCAL_PAGE_HEADERS = { 'x-shell-preview': '1' }
/** A token this close to its expiry is replaced before use, so no request goes out with a dying one. */
const TOKEN_RENEW_MARGIN_MS = 30_000
/** The user id the page shows the frame to unless told another: the local issuer's default too. */
export const DEFAULT_USER_ID = 'preview-user'

export class HttpError extends Error {
  constructor(response, detail) {
    super(`${response.status} ${detail ?? response.statusText}`)
    this.status = response.status
  }
}

export function createServiceClient() {
  /**
   * The current token of each caller, by its user id and sorted roles as JSON
   * (a user id may hold any separator one would join them with).
   */
  const tokens = new Map()

  /**
   * A token for `caller` (`{ sub, roles }`), reused until shortly before it
   * expires; `fresh` forces a new one (after a 401).
   */
  async function getToken({ sub, roles }, { fresh = false } = {}) {
    const key = JSON.stringify([sub, [...roles].sort()])
    const held = tokens.get(key)
    if (!fresh && held !== undefined && held.expiresAtMs - Date.now() > TOKEN_RENEW_MARGIN_MS)
      return held.token
    const response = await fetch('/local-issuer/preview-token', {
      method: 'POST',
      headers: { ...LOCAL_PAGE_HEADERS, 'content-type': 'application/json' },
      body: JSON.stringify({ sub, roles: [...roles] }),
      cache: 'no-store',
    })
    if (!response.ok) throw new HttpError(response, await readDetail(response))
    const body = await response.json()
    tokens.set(key, { token: body.access_token, expiresAtMs: Date.now() + body.expires_in * 1000 })
    return body.access_token
  }

  /** A GET of the API as `caller`; a 401 gets one retry with a fresh token. */
  async function getApi(path, caller, headers = {}) {
    for (let attempt = 1; ; attempt += 1) {
      const token = await getToken(caller, { fresh: attempt > 1 })
      const response = await fetch(path, {
        headers: { ...headers, authorization: `Bearer ${token}` },
        // The page keeps its own ETag and sends If-None-Match itself; the browser's cache stays out.
        cache: 'no-store',
      })
      if (response.status !== 401 || attempt > 1) return response
    }
  }

  return {
    getToken,

    /** `GET /api/v1/apps`: every registered app with its default locale and locales. */
    async listApps() {
      // The inventory is the same for every caller: any will do.
      const response = await getApi('/api/v1/apps', { sub: DEFAULT_USER_ID, roles: [] })
      if (!response.ok) throw new HttpError(response, await readDetail(response))
      return (await response.json()).apps
    },

    /** Every app's granted roles, from the local-mode helper (the API does not list them). */
    async listGrantedRoles() {
      const response = await fetch('/preview/granted-roles', {
        headers: LOCAL_PAGE_HEADERS,
        cache: 'no-store',
      })
      if (!response.ok) throw new HttpError(response, await readDetail(response))
      return (await response.json()).grantedRoles
    },

    /**
     * `GET /api/v1/shell/{appKey}` as `caller` (`{ sub, roles }`) in `locale`:
     * `{ etag, shell }`, `shell` undefined when `etag` still matches (304);
     * `null` for an app that is gone.
     */
    async fetchShell(appKey, caller, locale, etag) {
      const response = await getApi(`/api/v1/shell/${encodeURIComponent(appKey)}`, caller, {
        'accept-language': locale,
        ...(etag ? { 'if-none-match': etag } : {}),
      })
      if (response.status === 304) return { etag, shell: undefined }
      if (response.status === 404) return { etag: null, shell: null }
      if (!response.ok) throw new HttpError(response, await readDetail(response))
      return { etag: response.headers.get('etag'), shell: await response.json() }
    },
  }
}

/** A problem's `detail`, else nothing. */
async function readDetail(response) {
  try {
    return (await response.json()).detail
  } catch {
    return undefined
  }
}
