import type { FastifyInstance } from 'fastify'
import { authenticateThen } from './authenticate.js'
import { BEARER_TOKEN, documentRequest, INVENTORY_REQUEST_HEADERS } from './documented-requests.js'
import {
  CHALLENGE_HEADERS,
  INVENTORY_BODY_HEADERS,
  INVENTORY_HEADERS,
  jsonResponse,
  notModifiedResponse,
  OTHER_ERRORS,
  problemResponse,
  RETRY_AFTER_HEADERS,
} from './documented-responses.js'
import { appsBodySchema } from './response-schemas.js'
import {
  type ApiRouteDeps,
  sendNotReady,
  sendTagged,
  setVary,
  VARY_BY_CALLER,
} from './tagged-response.js'

/** `GET /api/v1/apps`: the registered apps, rendered with their tag when the snapshot was built. */
export function registerAppsRoutes(app: FastifyInstance, deps: ApiRouteDeps): void {
  const { verifier, snapshots } = deps
  const onRequest = setVary(VARY_BY_CALLER, deps.varyByOrigin)
  app.get('/api/v1/apps', { schema: appsSchema, config: appsConfig, onRequest }, (request, reply) =>
    authenticateThen(verifier, request.headers.authorization, reply, () => {
      const snapshot = snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, snapshots.notReadyReason())
      return sendTagged(request, reply, snapshot.appsInventory)
    }),
  )
}

const appsConfig = documentRequest({ headers: INVENTORY_REQUEST_HEADERS })

const appsResponses = {
  200: jsonResponse(
    'Every registered app, sorted by key, with the locales its shell speaks.',
    appsBodySchema,
    INVENTORY_BODY_HEADERS,
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
