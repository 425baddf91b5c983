import type { FastifyInstance } from 'fastify'
import { LOCAL_JWKS_PATH, type LocalIssuer } from '../auth/local-issuer.js'
import { refuseUnlessLocalSameOrigin } from '../http/local-same-origin.js'
import { problemSchema } from '../http/problem.js'
import { compileStrictJsonBody } from '../http/strict-json-body.js'
import { NOT_DOCUMENTED } from '../openapi/documented-requests.js'

/**
 * Seconds a preview token lives: minutes of clicking, yet one copied out of the browser is soon
 * worthless. The page renews it in time; its event stream ends at `exp` and reconnects with it.
 */
export const PREVIEW_TOKEN_TTL_S = 300

/**
 * The previewed user's fixed part; the page chooses the sub (rollouts depend on it) and roles. It
 * cannot know a real name and a sub is often opaque, so the menu always says "Preview User".
 */
const PREVIEW_USER = { username: 'preview', name: 'Preview User' } as const
/** The user id when the page names none. */
export const DEFAULT_PREVIEW_SUB = 'preview-user'

/** Local mode: its issuer's discovery and JWKS (its verifier fetches them) and preview tokens. */
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

  // A token for this service's preview page only, not for another site's page in the browser.
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
    // The subject rollouts bucket by: any text a provider might use (an email, a UUID), but no
    // control character, so no line break or NUL reaches a log line that quotes the token.
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
