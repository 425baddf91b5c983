import { errors } from 'jose'
import type { TokenVerificationResult } from '../metrics.js'

/** The underlying error in fields safe to log: jose's fixed message, never its claims payload. */
export interface ErrorSummary {
  readonly name: string
  readonly code?: string
  readonly message: string
  readonly claim?: string
  readonly reason?: string
}

/** A refused token; `kind` picks the answer: 401 `invalid_token` or 503 `keys_unavailable`. */
export class AuthError extends Error {
  override name = 'AuthError'
  readonly kind: 'invalid_token' | 'keys_unavailable'

  constructor(
    readonly result: TokenVerificationResult,
    /** Safe, short, for `error_description`; never contains the token. */
    readonly description: string,
    readonly underlying: ErrorSummary,
  ) {
    super(description)
    this.kind = result === 'keys_unavailable' ? 'keys_unavailable' : 'invalid_token'
  }
}

/** The identity provider's discovery document or key set could not be fetched or read. */
export class KeyFetchError extends Error {
  override name = 'KeyFetchError'
  constructor(
    readonly url: string,
    readonly reason: string,
  ) {
    super(`${url}: ${reason}`)
  }
}

/** Longest message kept in a summary; jose can echo a header parameter name, which a caller controls. */
const MAX_MESSAGE_CHARS = 200

/** Summarizes any thrown value without copying anything that could hold token content. */
export function summarizeError(error: unknown): ErrorSummary {
  if (!(error instanceof Error)) return { name: typeof error, message: 'non-error value thrown' }
  const { name } = error
  const message = error.message.slice(0, MAX_MESSAGE_CHARS)
  if (error instanceof errors.JWTClaimValidationFailed || error instanceof errors.JWTExpired) {
    return { name, code: error.code, message, claim: error.claim, reason: error.reason }
  }
  if (error instanceof errors.JOSEError) return { name, code: error.code, message }
  return { name, message }
}

/**
 * Maps a failure to its metric result and a safe description, by error class and jose `code`,
 * never by message text. `nbf` counts as `expired` (outside the validity window; one row in the
 * API's error table); a disallowed algorithm as `invalid_signature`; a wrong `typ`, a missing
 * `sub`/`exp` and other claim failures as `malformed` (not an access token of this realm).
 */
export function toAuthError(error: unknown): AuthError {
  if (error instanceof AuthError) return error
  const underlying = summarizeError(error)
  if (error instanceof KeyFetchError) {
    return new AuthError('keys_unavailable', 'identity provider keys are unavailable', underlying)
  }
  if (!(error instanceof errors.JOSEError)) {
    return new AuthError('malformed', 'token could not be verified', underlying)
  }
  switch (error.code) {
    case errors.JWTExpired.code:
      return new AuthError('expired', 'token expired', underlying)
    case errors.JWTClaimValidationFailed.code:
      return classifyClaimFailure(underlying)
    case errors.JWSSignatureVerificationFailed.code:
      return new AuthError('invalid_signature', 'signature verification failed', underlying)
    case errors.JOSEAlgNotAllowed.code:
      return new AuthError('invalid_signature', 'signing algorithm not allowed', underlying)
    case errors.JWKSNoMatchingKey.code:
      return new AuthError('unknown_kid', 'signing key not found', underlying)
    default:
      return new AuthError('malformed', 'token malformed', underlying)
  }
}

function classifyClaimFailure(underlying: ErrorSummary): AuthError {
  switch (underlying.claim) {
    case 'nbf':
      return new AuthError('expired', 'token not yet valid', underlying)
    case 'aud':
      return new AuthError('invalid_audience', 'audience not accepted', underlying)
    case 'iss':
      return new AuthError('invalid_issuer', 'issuer not accepted', underlying)
    case 'typ':
      return new AuthError('malformed', 'not an access token', underlying)
    default:
      return new AuthError(
        'malformed',
        `claim ${underlying.claim ?? 'unknown'} invalid`,
        underlying,
      )
  }
}
