import type { FastifyInstance } from 'fastify'
import { CODINGS } from '../http/accept-encoding.js'
import { type ApiRouteDeps, JSON_CONTENT_TYPE, PRIVATE_NO_CACHE } from '../http/api-conventions.js'
import { sendRepresentation } from '../http/send-representation.js'
import {
  BEARER_TOKEN,
  documentRequest,
  INVENTORY_REQUEST_HEADERS,
} from '../openapi/documented-requests.js'
import {
  API_ERRORS,
  INVENTORY_BODY_HEADERS,
  INVENTORY_HEADERS,
  jsonResponse,
  notModifiedResponse,
} from '../openapi/documented-responses.js'
import { appsBodySchema } from '../openapi/response-schemas.js'

/**
 * `GET /api/v1/apps`, encoded per snapshot: compressing thousands of apps takes a millisecond. Its
 * hooks (Vary, shedding, the token) are its group's, in routes/api.ts.
 */
export function registerAppsRoutes(app: FastifyInstance, path: string, deps: ApiRouteDeps): void {
  const { snapshots, negotiation, representations } = deps
  snapshots.onSwap((snapshot) => {
    for (const coding of CODINGS) representations.representationOf(snapshot.appsInventory, coding)
  })
  app.get(
    path,
    {
      schema: {
        operationId: 'listApps',
        summary: 'The registered apps',
        security: BEARER_TOKEN,
        response: appsResponses,
      },
      config: documentRequest({ headers: INVENTORY_REQUEST_HEADERS }),
      preHandler: deps.lookup.snapshot,
    },
    (request, reply) => {
      const { snapshot } = request
      const coding = negotiation.coding(request.headers['accept-encoding'])
      const representation = representations.representationOf(snapshot.appsInventory, coding)
      reply.header('cache-control', PRIVATE_NO_CACHE)
      return sendRepresentation(request, reply, representation, JSON_CONTENT_TYPE)
    },
  )
}

const appsResponses = {
  200: jsonResponse(
    'Every registered app, sorted by key, with the locales its shell speaks.',
    appsBodySchema,
    INVENTORY_BODY_HEADERS,
  ),
  304: notModifiedResponse(INVENTORY_HEADERS),
  ...API_ERRORS,
}
