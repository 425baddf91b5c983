import type { onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify'
import type { SnapshotSource } from '../snapshot/types.js'
import type { Negotiation } from './negotiation.js'
import type { RepresentationCache } from './representation-cache.js'

/** What every API route shares: its path prefix, its caching and Vary headers, its media type. */

/** Every API path, present and future. */
export const API_PREFIX = '/api/v1/'

/** Responses depend on the caller: shared caches must not keep them, browsers must revalidate. */
export const PRIVATE_NO_CACHE = 'private, no-cache'
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

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
export function varyHook(vary: string, varyByOrigin: boolean): onRequestHookHandler {
  const value = varyByOrigin ? `${vary}, Origin` : vary
  return (_request, reply, done) => {
    reply.header('vary', value)
    done()
  }
}

/** What the API routes answer from, each made once per service instance. */
export interface ApiRouteDeps {
  readonly snapshots: SnapshotSource
  /** The `onRequest` hook that verifies the token and sets `request.caller` (http/authentication.ts). */
  readonly authenticate: onRequestAsyncHookHandler
  readonly negotiation: Negotiation
  readonly representations: RepresentationCache
  /** CORS is on: responses vary with Origin too. */
  readonly varyByOrigin: boolean
}
