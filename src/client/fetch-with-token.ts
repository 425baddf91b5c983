import { readTokenSub } from './read-token-sub.js'
import type { GetToken } from './shell-types.js'

/**
 * GETs `url` with the token and the languages; after a 401, once more with a
 * renewed token. `headers` is called as each attempt is sent, with its
 * token, which may change the user and with them the tag to revalidate.
 */
export type FetchWithToken = (
  url: string,
  headers: (token: string) => Record<string, string | null>,
  signal: AbortSignal,
) => Promise<Response>

/**
 * The client's one way to ask the service. `onTokenSub` hears the user each
 * token names (read, not verified) before its request is sent: once a token
 * names its user, only that user's shell may be shown. `onToken` hears every
 * token: a new one may be let in where the last was refused (the stream).
 */
export function createFetchWithToken(
  getToken: GetToken,
  acceptLanguage: string,
  onTokenSub: (sub: string) => void,
  onToken: (token: string) => void,
): FetchWithToken {
  return async (url, headers, signal) => {
    for (let renew = false; ; renew = true) {
      const token = await getToken({ renew })
      const owner = readTokenSub(token)
      if (owner !== undefined) onTokenSub(owner)
      onToken(token)
      const wanted = {
        authorization: `Bearer ${token}`,
        'accept-language': acceptLanguage,
        ...headers(token),
      }
      // The headers with a value: no empty Accept-Language, no If-None-Match without a tag.
      const sent = Object.entries(wanted).filter((header) => header[1]) as [string, string][]
      // The default cache mode: the browser's cache revalidates what it holds, a request that
      // carries If-None-Match passes it by (its 304 comes to the client), and any other mode
      // would keep Chromium from reusing a CORS preflight.
      const response = await fetch(url, { headers: sent, signal })
      if (response.status !== 401 || renew) return response
      // Read to its end, so that the connection can carry the next request.
      await response.arrayBuffer()
    }
  }
}

/** A problem's `detail` (RFC 9457), else the status. */
export async function readDetail(response: Response): Promise<string> {
  try {
    const { detail } = (await response.json()) as { detail?: unknown }
    if (typeof detail === 'string') return detail
  } catch {}
  return `HTTP ${response.status}`
}
