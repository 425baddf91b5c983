import type { FastifyInstance } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { problemSchema } from '../http/problem.js'
import type { Metrics } from '../metrics.js'
import { authenticateThen } from './authenticate.js'
import { appsBodySchema } from './response-schemas.js'
import type { SnapshotSource } from './snapshot-source.js'
import { sendNotReady, sendTagged, VARY_BY_CALLER, varyWithOrigin } from './tagged-response.js'

/** `GET /api/v1/apps`: the registered apps, rendered with their tag when the snapshot was built. */
export function registerAppsRoutes(
  app: FastifyInstance,
  deps: {
    verifier: TokenVerifier
    snapshots: SnapshotSource
    metrics: Metrics
    varyByOrigin: boolean
  },
): void {
  const { verifier, snapshots, metrics } = deps
  const vary = varyWithOrigin(VARY_BY_CALLER, deps.varyByOrigin)
  app.get('/api/v1/apps', { schema: { response: appsResponses } }, (request, reply) =>
    authenticateThen(verifier, request.headers.authorization, reply, () => {
      const snapshot = snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
      const inventory = snapshot.appsInventory
      const { etag, body } = inventory
      return sendTagged(
        request,
        reply,
        { etag, vary, body: () => [body] },
        metrics.httpRequestDuration,
      )
    }),
  )
}

const appsResponses = {
  200: appsBodySchema,
  304: { type: 'null' },
  401: problemSchema,
  503: problemSchema,
}
