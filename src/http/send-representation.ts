import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Representation } from './representation.js'

/**
 * Sends a representation with its ETag, or a 304 when `If-None-Match` matches that tag (RFC 9110
 * section 13.1.2). The route sets its other headers first, so that a 304 carries what a 200 would.
 */
export function sendRepresentation(
  request: FastifyRequest,
  reply: FastifyReply,
  representation: Representation,
  contentType: string,
): FastifyReply {
  reply.header('etag', representation.etag)
  if (matchesIfNoneMatch(request.headers['if-none-match'], representation.etag)) {
    return reply.code(304).send()
  }
  if (representation.coding !== 'identity') reply.header('content-encoding', representation.coding)
  return reply.type(contentType).send(representation.body)
}

/** `If-None-Match`: `*`, or entity tags compared weakly (`W/"x"` matches `"x"`). */
function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  // The common case, a browser sending back the tag it was given, costs one comparison.
  if (header === etag) return true
  for (const part of header.split(',')) {
    let candidate = part.trim()
    if (candidate === '*') return true
    if (candidate.startsWith('W/')) candidate = candidate.slice(2)
    if (candidate === etag) return true
  }
  return false
}
