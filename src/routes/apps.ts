import type { FastifyInstance } from 'fastify'
import type { TokenVerifier } from '../auth/verify-token.js'
import { problemSchema } from '../http/problem.js'
import { authenticateThen } from './authenticate.js'
import { appsBodySchema } from './response-schemas.js'
import type { SnapshotSource } from './snapshot-source.js'
import { sendNotReady, sendTagged, VARY_BY_CALLER } from './tagged-response.js'

/** `GET /api/v1/apps`: the registered apps, rendered with their tag when the snapshot was built. */
export function registerAppsRoutes(
  app: FastifyInstance,
  deps: { verifier: TokenVerifier; snapshots: SnapshotSource },
): void {
  const { verifier, snapshots } = deps
  app.get('/api/v1/apps', { schema: { response: appsResponses } }, (request, reply) =>
    authenticateThen(verifier, request.headers.authorization, reply, () => {
      const snapshot = snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
      const inventory = snapshot.appsInventory
      return sendTagged(request, reply, inventory.etag, VARY_BY_CALLER, () => inventory.body)
    }),
  )
}

const appsResponses = {
  200: appsBodySchema,
  304: { type: 'null' },
  401: problemSchema,
  503: problemSchema,
}
