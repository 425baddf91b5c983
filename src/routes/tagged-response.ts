import type { FastifyReply, FastifyRequest } from 'fastify'
import { matchesIfNoneMatch } from '../http/preconditions.js'
import { sendProblem } from '../http/problem.js'

/** Responses depend on the caller: shared caches must not keep them, browsers must revalidate. */
export const CACHE_CONTROL = 'private, no-cache'
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
/** Seconds a client should wait while the first snapshot loads. */
const NOT_READY_RETRY_AFTER_S = '2'

/** What a response varies with: the inventory with the caller, the shell with the caller's language too. */
export const VARY_BY_CALLER = 'Authorization'
export const VARY_BY_CALLER_AND_LANGUAGE = 'Authorization, Accept-Language'

/** A precomputed response: its tag, what it varies with, and its bytes. */
export interface TaggedResponse {
  /** Strong ETag, quotes included. */
  readonly etag: string
  readonly vary: string
  /** The language of the body, when it has one. */
  readonly contentLanguage?: string
  readonly body: Buffer
}

/**
 * With CORS on, a tagged response varies with Origin too, also when the
 * request had none: a browser must not answer a page's cross-origin request
 * from a response it cached for a request without Origin, which carries no
 * CORS headers (the Fetch standard's rule for CORS and HTTP caches). Chosen
 * once, when the routes are registered, so no request pays for it.
 */
export function varyWithOrigin(vary: string, varyByOrigin: boolean): string {
  return varyByOrigin ? `${vary}, Origin` : vary
}

/**
 * Sends precomputed bytes with their ETag, or a 304 with the same caching
 * headers when `If-None-Match` matches (RFC 9110 section 13.1.2).
 */
export function sendTagged(
  request: FastifyRequest,
  reply: FastifyReply,
  response: TaggedResponse,
): FastifyReply {
  reply
    .header('etag', response.etag)
    .header('cache-control', CACHE_CONTROL)
    .header('vary', response.vary)
  if (response.contentLanguage !== undefined) {
    reply.header('content-language', response.contentLanguage)
  }
  if (matchesIfNoneMatch(request.headers['if-none-match'], response.etag)) {
    return reply.code(304).send()
  }
  return reply.type(JSON_CONTENT_TYPE).send(response.body)
}

export function sendNotReady(reply: FastifyReply, reason: string): FastifyReply {
  return sendProblem(reply, 'notReady', `no snapshot is loaded yet: ${reason}`, {
    'retry-after': NOT_READY_RETRY_AFTER_S,
  })
}
