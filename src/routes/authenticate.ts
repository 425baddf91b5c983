import type { FastifyReply } from 'fastify'
import { AuthError, type TokenVerifier, type VerifiedCaller } from '../auth/verify-token.js'
import { readBearerToken, toHeaderText } from '../http/bearer.js'
import { sendProblem } from '../http/problem.js'

const CHALLENGE = 'Bearer realm="shell"'
/** Seconds a client should wait when the identity provider's keys cannot be fetched. */
const KEYS_RETRY_AFTER_S = '5'

/**
 * Authenticates a request and hands the caller to `respond`, with whether
 * the token was verified just now (else it came from the cache). A cached
 * token is answered synchronously (no promise, no microtask); a new one is
 * verified first. Every failure becomes the API's 401 or 503 (README, HTTP API).
 */
export function authenticateThen(
  verifier: TokenVerifier,
  authorization: string | undefined,
  reply: FastifyReply,
  respond: (caller: VerifiedCaller, verifiedNow: boolean) => FastifyReply,
): FastifyReply | Promise<FastifyReply> {
  const token = readBearerToken(authorization)
  if (token === null) {
    return sendProblem(reply, 'unauthorized', 'a Bearer token is required', {
      'www-authenticate': CHALLENGE,
    })
  }
  const caller = verifier.authenticate(token)
  if (!(caller instanceof Promise)) return respond(caller, false)
  return caller.then(
    (verified) => respond(verified, true),
    (error: unknown) => sendAuthFailure(reply, error),
  )
}

function sendAuthFailure(reply: FastifyReply, error: unknown): FastifyReply {
  if (error instanceof AuthError && error.kind === 'keys_unavailable') {
    return sendProblem(
      reply,
      'keysUnavailable',
      'the identity provider keys cannot be fetched; try again shortly',
      {
        'retry-after': KEYS_RETRY_AFTER_S,
      },
    )
  }
  const description =
    error instanceof AuthError ? error.description : 'the token could not be verified'
  return sendProblem(reply, 'invalidToken', description, {
    'www-authenticate': `${CHALLENGE}, error="invalid_token", error_description="${toHeaderText(description)}"`,
  })
}
