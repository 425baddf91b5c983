import type { FastifyInstance } from 'fastify'
import { authenticateThen } from './authenticate.js'
import { BEARER_TOKEN, documentRequest, INVENTORY_REQUEST_HEADERS } from './documented-requests.js'
import {
  CHALLENGE_HEADERS,
  INVENTORY_HEADERS,
  jsonResponse,
  notModifiedResponse,
  OTHER_ERRORS,
  problemResponse,
  RETRY_AFTER_HEADERS,
} from './documented-responses.js'
import { appsBodySchema } from './response-schemas.js'
import {
  createTaggedSender,
  sendNotReady,
  type TaggedRouteDeps,
  VARY_BY_CALLER,
  varyWithOrigin,
} from './tagged-response.js'

const APPS_ROUTE = '/api/v1/apps'

/** `GET /api/v1/apps`: the registered apps, rendered with their tag when the snapshot was built. */
export function registerAppsRoutes(app: FastifyInstance, deps: TaggedRouteDeps): void {
  const { verifier, snapshots, metrics } = deps
  const vary = varyWithOrigin(VARY_BY_CALLER, deps.varyByOrigin)
  const sendTagged = createTaggedSender({
    route: APPS_ROUTE,
    durations: metrics.httpRequestDuration,
    hooksSetHeaders: deps.varyByOrigin,
  })
  app.get(APPS_ROUTE, { schema: appsSchema, config: appsConfig }, (request, reply) =>
    authenticateThen(verifier, request.headers.authorization, reply, () => {
      const snapshot = snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
      const inventory = snapshot.appsInventory
      const { etag, body } = inventory
      return sendTagged(request, reply, { etag, vary, body: () => [body] })
    }),
  )
}

const appsConfig = documentRequest({ headers: INVENTORY_REQUEST_HEADERS })

const appsResponses = {
  200: jsonResponse(
    'Every registered app, sorted by key, with the locales its shell speaks.',
    appsBodySchema,
    INVENTORY_HEADERS,
  ),
  304: notModifiedResponse(
    'If-None-Match matched: the caller holds these bytes.',
    INVENTORY_HEADERS,
  ),
  401: problemResponse('No Bearer token, or one that fails verification.', CHALLENGE_HEADERS),
  503: problemResponse(
    "No snapshot is loaded yet, or the identity provider's keys cannot be fetched.",
    RETRY_AFTER_HEADERS,
  ),
  default: OTHER_ERRORS,
}

const appsSchema = {
  operationId: 'listApps',
  summary: 'The registered apps',
  security: BEARER_TOKEN,
  response: appsResponses,
}
