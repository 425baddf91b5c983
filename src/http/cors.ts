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

const API_PATHS = `${API_PREFIX}/`

/**
 * The API's methods and the request headers it reads (the token, revalidation, language, a
 * stream's resume). A preflight answer is reused for ten minutes: a release's change of these
 * reaches open pages by then. Never `Access-Control-Allow-Credentials`: the API reads no cookie.
 */
const PREFLIGHT_HEADERS = {
  'access-control-allow-methods': 'GET, HEAD',
  'access-control-allow-headers': 'Authorization, If-None-Match, Accept-Language, Last-Event-ID',
  'access-control-max-age': '600',
}

/**
 * `origins` are exact and serialized as browsers send them (config/variables.ts): one Set
 * look-up of `Origin` as is; another scheme, port or host, or `null`, is another string.
 */
export function createCors(origins: readonly string[]): Cors {
  const listed: ReadonlySet<string> = new Set(origins)

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
      const origin = request.headers.origin
      if (origin !== undefined && listed.has(origin) && request.url.startsWith(API_PATHS))
        markListed(reply, origin)
    },
  }
}
