import type { FastifyInstance } from 'fastify'
import { LOCAL_JWKS_PATH, type LocalIssuer } from '../auth/local-issuer.js'

/** Local mode: discovery and JWKS of the service's own issuer, fetched by its own verifier over HTTP. */
export function registerLocalIssuerRoutes(
  app: FastifyInstance,
  deps: { localIssuer: LocalIssuer },
): void {
  const { localIssuer } = deps
  app.get('/local-issuer/.well-known/openid-configuration', { schema: HIDDEN }, async () =>
    localIssuer.discoveryDocument(),
  )
  app.get(`/local-issuer${LOCAL_JWKS_PATH}`, { schema: HIDDEN }, async () => localIssuer.jwks())
}

/**
 * Left out of the OpenAPI document: these serve the service's own verifier in
 * local mode, are no part of the API, and would make the document differ
 * between local mode and production.
 */
const HIDDEN = { hide: true }
