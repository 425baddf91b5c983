import type { FastifyInstance } from 'fastify'
import { answerAppRequest } from './app-request.js'
import {
  APP_KEY_PARAMS,
  BEARER_TOKEN,
  documentRequest,
  SHELL_REQUEST_HEADERS,
} from './documented-requests.js'
import {
  CHALLENGE_HEADERS,
  jsonResponse,
  notModifiedResponse,
  OTHER_ERRORS,
  problemResponse,
  RETRY_AFTER_HEADERS,
  SHELL_BODY_HEADERS,
  SHELL_HEADERS,
} from './documented-responses.js'
import { createLastShellMemo } from './last-shell-memo.js'
import { shellBodySchema } from './response-schemas.js'
import {
  type ApiRouteDeps,
  sendTagged,
  setVary,
  VARY_BY_CALLER_AND_LANGUAGE,
} from './tagged-response.js'

/**
 * `GET /api/v1/shell/:appKey`: the page frame of one app for the caller.
 * Per request: a token cache lookup, the language and the coding (each
 * memoized per header value), and the caller's last shell, else the
 * caller's audience, a memoized variant and the caller's user block joined
 * into it; its codings are made on first use and kept with it.
 */
export function registerShellRoutes(app: FastifyInstance, deps: ApiRouteDeps): void {
  const lastShellOf = createLastShellMemo()
  app.get<{ Params: { appKey: string } }>(
    '/api/v1/shell/:appKey',
    {
      schema: {
        operationId: 'getShell',
        summary: 'The page frame of one app, as the caller sees it',
        security: BEARER_TOKEN,
        response: shellResponses,
      },
      config: documentRequest({ params: APP_KEY_PARAMS, headers: SHELL_REQUEST_HEADERS }),
      onRequest: setVary(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin),
    },
    (request, reply) =>
      answerAppRequest(deps, request, reply, ({ caller, snapshot, view }) => {
        const locale = view.localeFor(request.headers['accept-language'])
        const { coded } = lastShellOf(snapshot, view, locale, caller)
        return sendTagged(request, reply, coded, locale)
      }),
  )
}

const shellResponses = {
  200: jsonResponse(
    "The app, its branding, the caller and the menus the caller may see, in one of the app's locales.",
    shellBodySchema,
    SHELL_BODY_HEADERS,
  ),
  304: notModifiedResponse('If-None-Match matched: the caller holds these bytes.', SHELL_HEADERS),
  401: problemResponse('No Bearer token, or one that fails verification.', CHALLENGE_HEADERS),
  404: problemResponse('No app has this key.'),
  503: problemResponse(
    "No snapshot is loaded yet, or the identity provider's keys cannot be fetched.",
    RETRY_AFTER_HEADERS,
  ),
  default: OTHER_ERRORS,
}
