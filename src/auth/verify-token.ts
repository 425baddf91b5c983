import { errors, type JWTPayload, type JWTVerifyOptions, jwtVerify } from 'jose'
import type { Logger } from 'pino'
import type { OidcConfig } from '../config/config.js'
import type { Metrics } from '../metrics.js'
import { AuthError, toAuthError } from './errors.js'
import { createFailureLog } from './failure-log.js'
import { createKeyStore, type KeySet } from './key-store.js'
import { createTokenCache } from './token-cache.js'
import {
  decodeJsonSegment,
  isBase64urlSegment,
  type JsonObject,
  splitSignedSegments,
} from './token-segments.js'
import { readVerifiedClaims, type VerifiedClaims } from './verified-claims.js'

export { AuthError } from './errors.js'

export interface TokenVerifier<Caller> {
  /** The caller, cached or verified now (hit or miss counted); rejects with AuthError only. */
  authenticate(token: string): Promise<Caller>
  /** Stops timers and aborts key fetches in flight. */
  close(): void
}

/** Asymmetric only: `none` has no signature, and `HS*` would use a public key as shared secret. */
const ALGORITHMS: readonly string[] = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
]
/**
 * Tokens over 8 KiB are refused unparsed: real access tokens are a few KiB even with many roles,
 * and parsing attacker-sized input costs CPU. Characters, not bytes: a token is ASCII (or fails).
 */
const MAX_TOKEN_CHARS = 8 * 1024
/** Header `typ` may also be absent; media-type spellings are equivalent (RFC 7515 section 4.1.9). */
const ACCEPTED_HEADER_TYPES = new Set(['jwt', 'at+jwt', 'application/jwt', 'application/at+jwt'])
/** Keycloak marks access tokens `Bearer`; ID tokens say `ID` and refresh tokens `Refresh`. */
const ACCESS_TOKEN_TYPE = 'Bearer'

export function createTokenVerifier<Caller extends { readonly expiresAtMs: number }>(options: {
  oidc: OidcConfig
  /** What the request path keeps of a verified token: made once per token, cached with it. */
  toCaller: (claims: VerifiedClaims) => Caller
  cacheMax: number
  failureLog: boolean
  logger: Logger
  metrics: Metrics
  fetchImpl?: typeof fetch
  /** Milliseconds since the epoch; injectable so tests can move past exp, cooldowns and max ages without sleeping. */
  now?: () => number
}): TokenVerifier<Caller> {
  const { oidc, metrics, toCaller } = options
  const now = options.now ?? Date.now
  const logger = options.logger.child({ component: 'auth' })
  const cache = createTokenCache<Caller>({ max: options.cacheMax, now })
  const keyStore = createKeyStore({
    oidc,
    fetchImpl: options.fetchImpl ?? fetch,
    metrics,
    logger,
    now,
    onKeysRemoved(kids) {
      const dropped = cache.dropVerifiedBy(kids)
      if (dropped > 0) logger.info({ dropped }, 'cached tokens of removed keys dropped')
    },
  })
  const failureLog = createFailureLog({ logger, enabled: options.failureLog, now })
  const verifyOptions = buildVerifyOptions(oidc)
  const verifyOptionsNow = () => ({ ...verifyOptions, currentDate: new Date(now()) })

  async function verifyUncached(token: string): Promise<Caller> {
    const { payload: payloadSegment, header } = readHeader(token)
    try {
      const kid = checkHeader(header)
      let keySet = await keyStore.load()
      let payload: JWTPayload
      try {
        payload = await verifySignedToken(token, keySet, verifyOptionsNow())
      } catch (error) {
        if (!(error instanceof errors.JWKSNoMatchingKey)) throw error
        // The provider may have rotated keys since the last fetch; the store enforces the cooldown.
        const refetched = await keyStore.refetchForUnknownKid()
        if (refetched === null) throw error
        keySet = refetched
        payload = await verifySignedToken(token, keySet, verifyOptionsNow())
      }
      // jose's decoder also takes padding and whitespace, which compact JWTs never hold (RFC 7515).
      if (!isBase64urlSegment(payloadSegment)) throw malformedPayload()
      checkAccessTokenClaims(payload)
      const caller = toCaller(readVerifiedClaims(payload, oidc.rolesPaths))
      if (isStillTrusted(keyStore.current(), keySet, kid)) cache.remember(token, caller, kid)
      return caller
    } catch (error) {
      // A payload that is no JSON object is malformed whatever else is wrong (a 401, even with keys
      // unavailable). Decoded only on failure, so a good token's payload is parsed once, by jose;
      // the price: such a token reaches the key store (which rate-limits fetches) before refusal.
      throw decodeJsonSegment(payloadSegment) === undefined ? malformedPayload() : error
    }
  }

  async function verifyAndCount(token: string): Promise<Caller> {
    metrics.tokenCache.inc({ result: 'miss' })
    try {
      const caller = await verifyUncached(token)
      metrics.tokenVerifications.inc({ result: 'ok' })
      return caller
    } catch (error) {
      const authError = toAuthError(error)
      metrics.tokenVerifications.inc({ result: authError.result })
      failureLog.record(token, authError)
      throw authError
    }
  }

  return {
    async authenticate(token) {
      const cached = cache.get(token)
      if (cached === undefined) return verifyAndCount(token)
      metrics.tokenCache.inc({ result: 'hit' })
      // Cheap check; without it a cache-only workload would never notice removed keys.
      keyStore.refreshIfStale()
      return cached
    },

    close() {
      keyStore.close()
      failureLog.close()
    },
  }
}

/** Everything but currentDate, which each verification sets. */
function buildVerifyOptions(oidc: OidcConfig): Readonly<JWTVerifyOptions> {
  return Object.freeze({
    algorithms: [...ALGORITHMS],
    issuer: oidc.issuer,
    audience: [...oidc.audiences],
    clockTolerance: oidc.clockToleranceS,
    // exp bounds the cache entry; a token without it would be valid forever.
    requiredClaims: ['exp', 'sub'],
  })
}

/** Refuses an oversized token (never parsed), then one without 3 segments and a JSON header. */
function readHeader(token: string): { header: JsonObject; payload: string | undefined } {
  if (token.length > MAX_TOKEN_CHARS) {
    throw new AuthError('malformed', 'token larger than 8 KiB', {
      name: 'TokenTooLarge',
      message: `token longer than ${MAX_TOKEN_CHARS} characters`,
    })
  }
  const segments = splitSignedSegments(token)
  const header = segments.count === 3 ? decodeJsonSegment(segments.header) : undefined
  if (header === undefined) throw new errors.JWSInvalid('Invalid Compact JWS')
  return { header, payload: segments.payload }
}

/** Refuses what needs no key first: `none` and `HS*` are a 401 even while the provider is down. */
function checkHeader(header: JsonObject): string | undefined {
  if (typeof header.alg !== 'string') {
    throw new errors.JWSInvalid('JWS "alg" (Algorithm) Header Parameter missing or invalid')
  }
  if (!ALGORITHMS.includes(header.alg)) {
    throw new errors.JOSEAlgNotAllowed('"alg" (Algorithm) Header Parameter value not allowed')
  }
  const { typ } = header
  if (
    typ !== undefined &&
    (typeof typ !== 'string' || !ACCEPTED_HEADER_TYPES.has(typ.toLowerCase()))
  ) {
    throw claimFailed('unexpected "typ" JWT header value', {}, 'typ', 'check_failed')
  }
  return typeof header.kid === 'string' ? header.kid : undefined
}

/** As jose reports a failed claim, so that toAuthError maps ours and jose's alike. */
function claimFailed(message: string, payload: JWTPayload, claim: string, reason: string): Error {
  return new errors.JWTClaimValidationFailed(message, payload, claim, reason)
}

function malformedPayload(): Error {
  return new errors.JWTInvalid('JWT Claims Set must be a top-level JSON object')
}

async function verifySignedToken(
  token: string,
  keySet: KeySet,
  verifyOptions: JWTVerifyOptions,
): Promise<JWTPayload> {
  try {
    return (await jwtVerify(token, keySet.resolveKey, verifyOptions)).payload
  } catch (error) {
    if (!(error instanceof errors.JWKSMultipleMatchingKeys)) throw error
    // Several keys fit (no kid, or a reused kid): the token is good if any of them verifies it.
    for await (const key of error) {
      try {
        return (await jwtVerify(token, key, verifyOptions)).payload
      } catch (attempt) {
        if (!(attempt instanceof errors.JWSSignatureVerificationFailed)) throw attempt
      }
    }
    throw new errors.JWSSignatureVerificationFailed()
  }
}

/** `exp` is jose's to check: it refuses one that is missing (requiredClaims) or not a number. */
function checkAccessTokenClaims(
  payload: JWTPayload,
): asserts payload is JWTPayload & { sub: string; exp: number } {
  if (payload.typ !== undefined && payload.typ !== ACCESS_TOKEN_TYPE) {
    throw claimFailed('unexpected "typ" claim value', payload, 'typ', 'check_failed')
  }
  if (typeof payload.sub !== 'string' || payload.sub === '') {
    throw claimFailed('"sub" claim must be a non-empty string', payload, 'sub', 'invalid')
  }
}

/** A refresh may have removed the key meanwhile; caching the token would outlive that drop. */
function isStillTrusted(
  current: KeySet | undefined,
  used: KeySet,
  kid: string | undefined,
): boolean {
  if (current === used) return true
  if (current === undefined || kid === undefined) return false
  return current.fingerprints.get(kid) === used.fingerprints.get(kid)
}
