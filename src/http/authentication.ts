import type { FastifyInstance, FastifyReply, onRequestAsyncHookHandler } from 'fastify'
import { AuthError, type TokenVerifier } from '../auth/verify-token.js'
import type { Caller } from '../snapshot/caller.js'
import { sendProblem } from './problem.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller, on the routes that run the `authenticate` hook. */
    caller: Caller
  }
}

const CHALLENGE = 'Bearer realm="shell"'
/** Seconds a client should wait when the identity provider's keys cannot be fetched. */
const KEYS_RETRY_AFTER_S = '5'

/**
 * Decorates requests with their `caller` and returns the `onRequest` hook that sets it; every
 * failure is the API's 401 or 503 (docs/api.md, "Requests and answers") before the handler runs.
 */
export function registerAuthentication(
  app: FastifyInstance,
  verifier: TokenVerifier<Caller>,
): onRequestAsyncHookHandler {
  app.decorateRequest('caller', null as unknown as Caller)
  return async function authenticate(request, reply) {
    const token = readBearerToken(request.headers.authorization)
    if (token === null) {
      return sendProblem(reply, 'unauthorized', 'a Bearer token is required', {
        'www-authenticate': CHALLENGE,
      })
    }
    try {
      request.caller = await verifier.authenticate(token)
    } catch (error) {
      return sendAuthFailure(reply, error)
    }
  }
}

/**
 * The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 9110
 * section 11.1), `''` for a Bearer header without one, null for no Bearer header at all.
 */
function readBearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined || authorization.length < 6) return null
  const scheme = authorization.slice(0, 6)
  if (scheme !== 'Bearer' && scheme.toLowerCase() !== 'bearer') return null
  const rest = authorization.slice(6)
  if (rest !== '' && rest[0] !== ' ') return null
  return rest.trim()
}

function sendAuthFailure(reply: FastifyReply, error: unknown): FastifyReply {
  if (error instanceof AuthError && error.kind === 'keys_unavailable') {
    return sendProblem(
      reply,
      'keysUnavailable',
      'the identity provider keys cannot be fetched; try again shortly',
      { 'retry-after': KEYS_RETRY_AFTER_S },
    )
  }
  const description =
    error instanceof AuthError ? error.description : 'the token could not be verified'
  // Header-safe `error_description`: printable ASCII without quotes or backslashes.
  const headerText = description.replace(/[^\x20-\x7e]|["\\]/g, "'").slice(0, 200)
  return sendProblem(reply, 'invalidToken', description, {
    'www-authenticate': `${CHALLENGE}, error="invalid_token", error_description="${headerText}"`,
  })
}
