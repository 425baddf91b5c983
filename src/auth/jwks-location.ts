import type { OidcConfig } from '../config/config.js'
import { KeyFetchError } from './errors.js'
import type { FetchProviderJson } from './provider-fetch.js'

/** Where the key set lives: the explicit URL when configured, else from the discovery document. */
export async function locateJwks(
  oidc: OidcConfig,
  fetchProviderJson: FetchProviderJson,
): Promise<string> {
  if (oidc.jwksUrl !== null) return oidc.jwksUrl
  const discoveryDocumentUrl = `${oidc.discoveryUrl.replace(/\/+$/, '')}/.well-known/openid-configuration`
  const advertised = await fetchProviderJson(discoveryDocumentUrl, (json) =>
    readJwksUri(discoveryDocumentUrl, json),
  )
  return rewriteToDiscoveryOrigin({ ...oidc, jwksUri: advertised })
}

function readJwksUri(documentUrl: string, json: unknown): string {
  const jwksUri = (json as { jwks_uri?: unknown } | null)?.jwks_uri
  if (typeof jwksUri !== 'string' || !URL.canParse(jwksUri)) {
    throw new KeyFetchError(documentUrl, 'discovery document has no valid jwks_uri')
  }
  const protocol = new URL(jwksUri).protocol
  if (protocol !== 'http:' && protocol !== 'https:') {
    throw new KeyFetchError(documentUrl, 'jwks_uri is not an http(s) URL')
  }
  return jwksUri
}

/**
 * Pods often cannot reach the public addresses a provider advertises, but can reach the discovery
 * URL: a `jwks_uri` on the issuer's origin is fetched from the discovery origin when that differs.
 */
export function rewriteToDiscoveryOrigin(options: {
  issuer: string
  discoveryUrl: string
  jwksUri: string
}): string {
  const issuerOrigin = new URL(options.issuer).origin
  const discoveryOrigin = new URL(options.discoveryUrl).origin
  const jwks = new URL(options.jwksUri)
  if (discoveryOrigin === issuerOrigin || jwks.origin !== issuerOrigin) return options.jwksUri
  return new URL(`${jwks.pathname}${jwks.search}`, discoveryOrigin).toString()
}
