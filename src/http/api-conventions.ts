import type { onRequestAsyncHookHandler, onRequestHookHandler } from 'fastify'
import type { SnapshotSource } from '../snapshot/types.js'
import type { AppLookup } from './app-lookup.js'
import type { Negotiation } from './negotiation.js'
import type { RepresentationCache } from './representation-cache.js'

/** What every API route shares: its path prefix, its caching and Vary headers, its media type. */
export const API_PREFIX = '/api/v1'

/** Responses depend on the caller: shared caches must not keep them, browsers must revalidate. */
export const PRIVATE_NO_CACHE = 'private, no-cache'
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

export const VARY_BY_CALLER = 'Authorization, Accept-Encoding'
export const VARY_BY_CALLER_AND_LANGUAGE = 'Authorization, Accept-Language, Accept-Encoding'

/**
 * The route's `Vary`, set before anything runs so that errors carry it too: a cache must not
 * hand one caller's 401 to another. With CORS on, Origin too, even on requests without one,
 * whose cached answer has no CORS headers (the Fetch standard's rule for CORS and HTTP caches).
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
  /** authentication.ts */
  readonly authenticate: onRequestAsyncHookHandler
  /** shed-excess.ts */
  readonly shedExcess: onRequestHookHandler
  readonly lookup: AppLookup
  readonly negotiation: Negotiation
  readonly representations: RepresentationCache
  /** CORS is on: responses vary with Origin too. */
  readonly varyByOrigin: boolean
}
