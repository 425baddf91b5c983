/** What the packaging tests hold the deploy files and the operator guide to (contract, section 3). */

/** Every variable the service reads. */
export const CONTRACT_VARIABLES: ReadonlySet<string> = new Set([
  'PORT',
  'HOST',
  'DATABASE_URL',
  'FEED_DATABASE_URL',
  'MIGRATE',
  'OIDC_ISSUER',
  'OIDC_AUDIENCE',
  'OIDC_DISCOVERY_URL',
  'OIDC_JWKS_URL',
  'OIDC_ROLES_CLAIM',
  'OIDC_CLOCK_TOLERANCE_S',
  'OIDC_JWKS_COOLDOWN_S',
  'OIDC_JWKS_MAX_AGE_S',
  'AUTH_FAILURE_LOG',
  'TOKEN_CACHE_MAX',
  'LOG_LEVEL',
  'LOG_REQUESTS',
])

/** The port the image listens on, the container port, and the probes' target. */
export const CONTRACT_PORT = 8080
