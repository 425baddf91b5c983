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

/**
 * Sends precomputed bytes with their ETag, or a 304 with the same caching
 * headers when `If-None-Match` matches. `body` is a thunk so that a 304 never
 * assembles the bytes.
 */
export function sendTagged(
  request: FastifyRequest,
  reply: FastifyReply,
  etag: string,
  vary: string,
  body: () => Buffer,
): FastifyReply {
  reply.header('etag', etag).header('cache-control', CACHE_CONTROL).header('vary', vary)
  if (matchesIfNoneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send()
  return reply.header('content-type', JSON_CONTENT_TYPE).send(body())
}

export function sendNotReady(reply: FastifyReply, reason: string): FastifyReply {
  return sendProblem(reply, 'notReady', `no snapshot is loaded yet: ${reason}`, {
    'retry-after': NOT_READY_RETRY_AFTER_S,
  })
}
