import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { API_PREFIX } from './api-conventions.js'
import { sendProblem } from './problem.js'

/**
 * CORS for pages on the listed origins (CORS_ORIGINS), on API paths only: probes, metrics and
 * the local issuer serve servers, not pages. Without origins no hook runs: `OPTIONS` is a 405.
 * Not @fastify/cors: it lets an unlisted origin's preflight through instead of a 403, cannot
 * mark the answers fastify sends without hooks, and reads the route's options on every request.
 */
export interface Cors {
  /** The hook on every request: answers preflights, and marks the responses to listed origins. */
  readonly onRequest: onRequestHookHandler
  /** The same marks, for the responses fastify sends without running hooks (a URL it cannot route). */
  addHeaders(request: FastifyRequest, reply: FastifyReply): void
}

/**
 * Readable by a page beyond the safelisted headers: the ETag to revalidate with, the language,
 * `WWW-Authenticate` to tell an expired token from a missing one, `Retry-After` for a 503.
 */
const EXPOSED_HEADERS = 'ETag, Content-Language, WWW-Authenticate, Retry-After'

/** The only methods the API answers. */
const ALLOWED_METHODS = 'GET, HEAD'

/** The request headers the API reads: the token, revalidation, language, a stream's resume. */
const ALLOWED_HEADERS = 'Authorization, If-None-Match, Accept-Language, Last-Event-ID'

/**
 * Seconds a browser may reuse a preflight answer for one URL: one preflight per URL every ten
 * minutes, and a release's change of the allowed methods or headers reaches open pages by then.
 */
const PREFLIGHT_MAX_AGE_S = '600'

/** What the paths of the API, and only them, start with. */
const API_PATHS = `${API_PREFIX}/`

/** Never `Access-Control-Allow-Credentials`: the API reads a Bearer token, no cookie. */
const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': ALLOWED_METHODS,
  'access-control-allow-headers': ALLOWED_HEADERS,
  'access-control-max-age': PREFLIGHT_MAX_AGE_S,
}

/**
 * `origins` are exact and serialized as browsers send them (config/variables.ts): one Set
 * look-up of `Origin` as is; another scheme, port or host, or `null`, is another string.
 */
export function createCors(origins: readonly string[]): Cors {
  const listed: ReadonlySet<string> = new Set(origins)

  function listedOrigin(request: FastifyRequest): string | undefined {
    const origin = request.headers.origin
    if (origin === undefined || !listed.has(origin)) return undefined
    return request.url.startsWith(API_PATHS) ? origin : undefined
  }

  function markListed(reply: FastifyReply, origin: string): void {
    reply
      .header('access-control-allow-origin', origin)
      .header('access-control-expose-headers', EXPOSED_HEADERS)
      // Routes that vary with more (Authorization, Accept-Language) list Origin with them.
      .header('vary', 'Origin')
  }

  return {
    onRequest(request, reply, done) {
      const origin = request.headers.origin
      // Requests without Origin (servers, same-origin pages, curl) cost this one check.
      if (origin === undefined || !request.url.startsWith(API_PATHS)) {
        done()
        return
      }
      const preflight =
        request.method === 'OPTIONS' &&
        request.headers['access-control-request-method'] !== undefined
      if (!listed.has(origin)) {
        // No CORS header at all: the browser refuses the page whatever the status.
        if (preflight) sendProblem(reply, 'originNotAllowed', 'this origin may not call the API')
        else done()
        return
      }
      markListed(reply, origin)
      // An OPTIONS without Access-Control-Request-Method is no preflight: the route's 405.
      if (preflight) reply.code(204).headers(PREFLIGHT_HEADERS).send()
      else done()
    },

    addHeaders(request, reply) {
      const origin = listedOrigin(request)
      if (origin !== undefined) markListed(reply, origin)
    },
  }
}
