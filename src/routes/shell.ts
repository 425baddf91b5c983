import type { FastifyInstance } from 'fastify'
import { APP_KEY_PATTERN } from '../db/vocabulary.js'
import { sendProblem } from '../http/problem.js'
import { authenticateThen } from './authenticate.js'
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
  SHELL_HEADERS,
} from './documented-responses.js'
import { createLastShellMemo } from './last-shell-memo.js'
import { shellBodySchema } from './response-schemas.js'
import {
  createTaggedSender,
  sendNotReady,
  type TaggedRouteDeps,
  VARY_BY_CALLER_AND_LANGUAGE,
  varyWithOrigin,
} from './tagged-response.js'

const APP_KEY = new RegExp(APP_KEY_PATTERN)
const SHELL_ROUTE = '/api/v1/shell/:appKey'

/**
 * `GET /api/v1/shell/:appKey`: the page frame of one app for the caller.
 * Per request: a cache lookup, the language (memoized per header value), the
 * caller's last shell (else a role-set key and a memoized variant), and the
 * variant's precomputed head and tail written around the caller's user block.
 */
export function registerShellRoutes(app: FastifyInstance, deps: TaggedRouteDeps): void {
  const { verifier, snapshots, metrics } = deps
  const vary = varyWithOrigin(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin)
  const lastShellOf = createLastShellMemo()
  const sendTagged = createTaggedSender({
    route: SHELL_ROUTE,
    durations: metrics.httpRequestDuration,
    hooksSetHeaders: deps.varyByOrigin,
  })
  app.get<{ Params: { appKey: string } }>(
    SHELL_ROUTE,
    {
      schema: {
        operationId: 'getShell',
        summary: 'The page frame of one app, as the caller sees it',
        security: BEARER_TOKEN,
        response: shellResponses,
      },
      config: documentRequest({ params: APP_KEY_PARAMS, headers: SHELL_REQUEST_HEADERS }),
    },
    (request, reply) => {
      const { appKey } = request.params
      // A key that cannot exist is answered without verifying anything.
      if (!APP_KEY.test(appKey)) return sendProblem(reply, 'notFound', 'no such app')
      return authenticateThen(verifier, request.headers.authorization, reply, (caller, fresh) => {
        const snapshot = snapshots.current()
        if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
        const view = snapshot.app(appKey)
        if (view === undefined) return sendProblem(reply, 'notFound', `no app "${appKey}"`)
        const locale = view.localeFor(request.headers['accept-language'])
        const { variant, etag } = lastShellOf(snapshot, view, locale, caller, { remember: !fresh })
        const body = () => [variant.head, caller.userBlock, variant.tail]
        return sendTagged(request, reply, { etag, vary, contentLanguage: locale, body })
      })
    },
  )
}

const shellResponses = {
  200: jsonResponse(
    "The app, its branding, the caller and the menus the caller may see, in one of the app's locales.",
    shellBodySchema,
    SHELL_HEADERS,
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
