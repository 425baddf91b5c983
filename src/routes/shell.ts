import type { FastifyInstance } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { problemSchema, sendProblem } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import { APP_KEY_PATTERN } from '../vocabulary.js'
import { authenticateThen } from './authenticate.js'
import { createLastShellMemo } from './last-shell-memo.js'
import { shellBodySchema } from './response-schemas.js'
import type { SnapshotSource } from './snapshot-source.js'
import {
  sendNotReady,
  sendTagged,
  VARY_BY_CALLER_AND_LANGUAGE,
  varyWithOrigin,
} from './tagged-response.js'

const APP_KEY = new RegExp(APP_KEY_PATTERN)

/**
 * `GET /api/v1/shell/:appKey`: the page frame of one app for the caller.
 * Per request: a cache lookup, the language (memoized per header value), the
 * caller's last shell (else a role-set key and a memoized variant), and two
 * precomputed buffers joined around the caller's precomputed user block.
 */
export function registerShellRoutes(
  app: FastifyInstance,
  deps: {
    verifier: TokenVerifier
    snapshots: SnapshotSource
    metrics: Metrics
    varyByOrigin: boolean
  },
): void {
  const { verifier, snapshots, metrics } = deps
  const vary = varyWithOrigin(VARY_BY_CALLER_AND_LANGUAGE, deps.varyByOrigin)
  const lastShellOf = createLastShellMemo()
  app.get<{ Params: { appKey: string } }>(
    '/api/v1/shell/:appKey',
    { schema: { response: shellResponses } },
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
        return sendTagged(
          request,
          reply,
          { etag, vary, contentLanguage: locale, body },
          metrics.httpRequestDuration,
        )
      })
    },
  )
}

const shellResponses = {
  200: shellBodySchema,
  304: { type: 'null' },
  401: problemSchema,
  404: problemSchema,
  503: problemSchema,
}
