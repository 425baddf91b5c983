import type { FastifyInstance } from 'fastify'
import { LOCAL_JWKS_PATH, type LocalIssuer } from '../auth/local-issuer.js'
import { refuseUnlessLocalSameOrigin } from '../http/local-same-origin.js'
import { problemSchema } from '../http/problem.js'
import { compileStrictJsonBody } from '../http/strict-json-body.js'
import { NOT_DOCUMENTED } from '../openapi/documented-requests.js'

/**
 * Seconds a preview token lives: long enough for a few minutes of clicking,
 * short enough that one copied out of the browser is soon worthless. The
 * page asks for a new one before it runs out, and its event stream, which
 * ends at the token's `exp`, reconnects with it.
 */
export const PREVIEW_TOKEN_TTL_S = 300

/**
 * Who the preview page shows the frame to: the user id (`sub`) and the roles
 * are chosen, the rest is fixed. The page cannot know a real user's name, and
 * a sub is often an opaque id, so the user menu keeps saying "Preview User"
 * whoever is previewed; only the sub, on which rollouts depend, changes.
 */
const PREVIEW_USER = { username: 'preview', name: 'Preview User' } as const
/** The user id when the page names none. */
export const DEFAULT_PREVIEW_SUB = 'preview-user'

/**
 * Local mode: discovery and JWKS of the service's own issuer, fetched by its
 * own verifier over HTTP, and the preview page's way to a token.
 */
export function registerLocalIssuerRoutes(
  app: FastifyInstance,
  deps: { localIssuer: LocalIssuer },
): void {
  const { localIssuer } = deps
  app.get('/local-issuer/.well-known/openid-configuration', { schema: NOT_DOCUMENTED }, async () =>
    localIssuer.discoveryDocument(),
  )
  app.get(`/local-issuer${LOCAL_JWKS_PATH}`, { schema: NOT_DOCUMENTED }, async () =>
    localIssuer.jwks(),
  )

  // A token for a chosen user id and roles, to the preview page of this service
  // only: a page of another site in the same browser must not get one.
  app.post<{ Body: { roles: string[]; sub?: string } }>(
    '/local-issuer/preview-token',
    {
      onRequest: refuseUnlessLocalSameOrigin,
      bodyLimit: 16 * 1024,
      validatorCompiler: compileStrictJsonBody,
      schema: {
        ...NOT_DOCUMENTED,
        body: previewTokenRequestSchema,
        response: previewTokenResponses,
      },
    },
    async (request, reply) => {
      const token = await localIssuer.signToken({
        ...PREVIEW_USER,
        sub: request.body.sub ?? DEFAULT_PREVIEW_SUB,
        roles: [...new Set(request.body.roles)],
        ttlSeconds: PREVIEW_TOKEN_TTL_S,
      })
      reply.header('cache-control', 'no-store')
      return { access_token: token, token_type: 'Bearer', expires_in: PREVIEW_TOKEN_TTL_S }
    },
  )
}

const previewTokenRequestSchema = {
  type: 'object',
  required: ['roles'],
  additionalProperties: false,
  properties: {
    roles: {
      type: 'array',
      maxItems: 200,
      items: { type: 'string', minLength: 1, maxLength: 200 },
    },
    // The token's subject, which rollout buckets are computed from: any text
    // a provider might use (an email, a UUID), but no control character, so no
    // line break or NUL reaches a log line that quotes the token.
    sub: {
      type: 'string',
      minLength: 1,
      maxLength: 200,
      // General category Cc: C0, DEL and C1 (Ajv compiles patterns with the `u` flag).
      pattern: '^\\P{Cc}*$',
    },
  },
}

const previewTokenResponses = {
  200: {
    type: 'object',
    required: ['access_token', 'token_type', 'expires_in'],
    properties: {
      access_token: { type: 'string' },
      token_type: { type: 'string' },
      expires_in: { type: 'integer' },
    },
  },
  400: problemSchema,
  403: problemSchema,
}
