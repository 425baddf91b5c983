import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { negotiateCoding } from '../http/accept-encoding.js'
import type { CodedBody } from '../http/coded-body.js'
import { matchesIfNoneMatch } from '../http/preconditions.js'
import { sendProblem } from '../http/problem.js'
import type { SnapshotSource } from '../snapshot/types.js'

/** What the API routes answer from: the token verifier and the snapshots. */
export interface ApiRouteDeps {
  readonly verifier: TokenVerifier
  readonly snapshots: SnapshotSource
  /** CORS is on: responses vary with Origin too. */
  readonly varyByOrigin: boolean
}

/** Responses depend on the caller: shared caches must not keep them, browsers must revalidate. */
export const CACHE_CONTROL = 'private, no-cache'
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
/** Seconds a client should wait while the first snapshot loads. */
const NOT_READY_RETRY_AFTER_S = '2'

/** What a response varies with: the inventory with the caller, the shell with the caller's language too. */
export const VARY_BY_CALLER = 'Authorization, Accept-Encoding'
export const VARY_BY_CALLER_AND_LANGUAGE = 'Authorization, Accept-Language, Accept-Encoding'

/**
 * The route's `Vary`, set before anything else runs, so that every answer
 * carries it, errors included: a cache must not hand one caller's 401 to
 * another. With CORS on, it varies with Origin too, also when the request
 * had none: a browser must not answer a page's cross-origin request from a
 * response it cached for a request without Origin, which carries no CORS
 * headers (the Fetch standard's rule for CORS and HTTP caches). Chosen once,
 * when the routes are registered, so no request pays for it.
 */
export function setVary(vary: string, varyByOrigin: boolean): onRequestHookHandler {
  const value = varyByOrigin ? `${vary}, Origin` : vary
  return (_request, reply, done) => {
    reply.header('vary', value)
    done()
  }
}

/**
 * Sends a precomputed body in the coding the request accepts best (http/
 * accept-encoding.ts), with that coding's ETag, or a 304 with the same
 * caching headers when `If-None-Match` matches that tag (RFC 9110 section
 * 13.1.2).
 */
export function sendTagged(
  request: FastifyRequest,
  reply: FastifyReply,
  coded: CodedBody,
  contentLanguage?: string,
): FastifyReply {
  const representation = coded.in(negotiateCoding(request.headers['accept-encoding']))
  reply.header('etag', representation.etag).header('cache-control', CACHE_CONTROL)
  if (contentLanguage !== undefined) reply.header('content-language', contentLanguage)
  if (matchesIfNoneMatch(request.headers['if-none-match'], representation.etag)) {
    return reply.code(304).send()
  }
  if (representation.coding !== 'identity') reply.header('content-encoding', representation.coding)
  return reply.type(JSON_CONTENT_TYPE).send(representation.body)
}

export function sendNotReady(reply: FastifyReply, reason: string): FastifyReply {
  return sendProblem(reply, 'notReady', `no snapshot is loaded yet: ${reason}`, {
    'retry-after': NOT_READY_RETRY_AFTER_S,
  })
}
