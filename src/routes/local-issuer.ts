import type { FastifyInstance } from 'fastify'
import { LOCAL_JWKS_PATH, type LocalIssuer } from '../auth/local-issuer.js'

/** Local mode: discovery and JWKS of the service's own issuer, fetched by its own verifier over HTTP. */
export function registerLocalIssuerRoutes(
  app: FastifyInstance,
  deps: { localIssuer: LocalIssuer },
): void {
  const { localIssuer } = deps
  app.get('/local-issuer/.well-known/openid-configuration', async () =>
    localIssuer.discoveryDocument(),
  )
  app.get(`/local-issuer${LOCAL_JWKS_PATH}`, async () => localIssuer.jwks())
}
