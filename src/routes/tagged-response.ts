import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { matchesIfNoneMatch } from '../http/preconditions.js'
import { sendProblem } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import {
  type RequestDurationHistogram,
  secondsSinceReceived,
} from '../request-duration-histogram.js'
import type { SnapshotSource } from '../snapshot/types.js'

/** Responses depend on the caller: shared caches must not keep them, browsers must revalidate. */
export const CACHE_CONTROL = 'private, no-cache'
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
/** Seconds a client should wait while the first snapshot loads. */
const NOT_READY_RETRY_AFTER_S = '2'

/** What a response varies with: the inventory with the caller, the shell with the caller's language too. */
export const VARY_BY_CALLER = 'Authorization'
export const VARY_BY_CALLER_AND_LANGUAGE = 'Authorization, Accept-Language'

/** What a route that answers with precomputed, tagged bytes needs. */
export interface TaggedRouteDeps {
  readonly verifier: TokenVerifier
  readonly snapshots: SnapshotSource
  readonly metrics: Metrics
  /**
   * CORS is on: responses vary with Origin too, and its hook has set headers
   * on the reply (the only hook that sets any before these routes answer).
   */
  readonly varyByOrigin: boolean
}

/** A precomputed response: its tag, what it varies with, and its body in pieces. */
export interface TaggedResponse {
  /** Strong ETag, quotes included. */
  readonly etag: string
  readonly vary: string
  /** The language of the body, when it has one. */
  readonly contentLanguage?: string
  /** The body's pieces, written as they are: a thunk, so that a 304 never gathers them. */
  readonly body: () => readonly Buffer[]
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

/** Sends a precomputed response: see createTaggedSender. */
export type TaggedSender = (
  request: FastifyRequest,
  reply: FastifyReply,
  response: TaggedResponse,
) => FastifyReply

/**
 * Sends precomputed bytes with their ETag, or a 304 with the same caching
 * headers when `If-None-Match` matches, straight onto the socket: the
 * pieces go out in one write of their own (the user block between a
 * variant's head and tail is never copied into one buffer), and fastify's
 * send pipeline, made for bodies it must serialize, is skipped. The
 * request's duration is recorded here, since a reply that bypasses
 * fastify's send does not reach its onResponse hook.
 *
 * Made once per route, so that what is fixed for the route costs nothing
 * per request: its URL, the histogram's label (fastify's
 * `request.routeOptions` builds an object of a dozen fields on every read),
 * and whether a hook may have set headers on the reply (CORS, when it is
 * on): those are kept; else the headers start afresh, where fastify's
 * `getHeaders` would copy two objects per request.
 */
export function createTaggedSender(options: {
  readonly route: string
  readonly durations: RequestDurationHistogram
  readonly hooksSetHeaders: boolean
}): TaggedSender {
  const { route, durations, hooksSetHeaders } = options
  return (request, reply, response) => {
    const status = matchesIfNoneMatch(request.headers['if-none-match'], response.etag) ? 304 : 200
    const headers: OutgoingHttpHeaders = hooksSetHeaders
      ? (reply.getHeaders() as OutgoingHttpHeaders)
      : {}
    headers.etag = response.etag
    headers['cache-control'] = CACHE_CONTROL
    headers.vary = response.vary
    if (response.contentLanguage !== undefined)
      headers['content-language'] = response.contentLanguage
    reply.hijack()
    const raw = reply.raw
    if (status === 304) {
      raw.writeHead(304, headers).end()
    } else {
      const pieces = response.body()
      let length = 0
      for (const piece of pieces) length += piece.length
      headers['content-type'] = JSON_CONTENT_TYPE
      headers['content-length'] = length
      raw.writeHead(200, headers)
      if (request.method === 'HEAD') {
        raw.end()
      } else {
        raw.cork()
        for (const piece of pieces) raw.write(piece)
        raw.end()
        raw.uncork()
      }
    }
    durations.observe(route, request.method, status, secondsSinceReceived(request.raw))
    return reply
  }
}

export function sendNotReady(reply: FastifyReply, reason: string): FastifyReply {
  return sendProblem(reply, 'notReady', `no snapshot is loaded yet: ${reason}`, {
    'retry-after': NOT_READY_RETRY_AFTER_S,
  })
}
