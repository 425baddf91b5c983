import type { FastifyInstance } from 'fastify'
import { type ApiRouteDeps, JSON_CONTENT_TYPE, PRIVATE_NO_CACHE } from '../http/api-conventions.js'
import { createLastShells } from '../http/last-shells.js'
import { sendRepresentation } from '../http/send-representation.js'
import {
  APP_KEY_PARAMS,
  BEARER_TOKEN,
  documentRequest,
  SHELL_REQUEST_HEADERS,
} from '../openapi/documented-requests.js'
import {
  API_ERRORS,
  jsonResponse,
  NO_SUCH_APP,
  notModifiedResponse,
  SHELL_BODY_HEADERS,
  SHELL_HEADERS,
} from '../openapi/documented-responses.js'
import { shellBodySchema } from '../openapi/response-schemas.js'
import { buildShellResponse } from '../snapshot/shell-response.js'

/**
 * `GET /api/v1/shell/:appKey`: the page frame of one app for the caller: its last shell if it asked
 * the same before (http/last-shells.ts), else the shell response (snapshot/shell-response.ts) in
 * the caller's coding (http/representation-cache.ts); sent, or answered with a 304. Its hooks
 * (Vary, shedding, the key, the token) are its group's, in routes/api.ts.
 */
export function registerShellRoutes(app: FastifyInstance, path: string, deps: ApiRouteDeps): void {
  const { negotiation, representations } = deps
  const lastShells = createLastShells(deps.snapshots)
  app.get<{ Params: { appKey: string } }>(
    path,
    {
      schema: {
        operationId: 'getShell',
        summary: 'The page frame of one app, as the caller sees it',
        security: BEARER_TOKEN,
        response: shellResponses,
      },
      config: documentRequest({ params: APP_KEY_PARAMS, headers: SHELL_REQUEST_HEADERS }),
      preHandler: deps.lookup.appView,
    },
    (request, reply) => {
      const { headers, caller, appView: view } = request
      const locale = view.localeFor(negotiation.languages(headers['accept-language']))
      const coding = negotiation.coding(headers['accept-encoding'])
      const representation = lastShells.representationOf(caller, view, locale, coding, () =>
        representations.representationOf(buildShellResponse(view, caller, locale), coding),
      )
      reply.header('cache-control', PRIVATE_NO_CACHE).header('content-language', locale)
      return sendRepresentation(request, reply, representation, JSON_CONTENT_TYPE)
    },
  )
}

const shellResponses = {
  200: jsonResponse(
    "The app, its branding, the caller and the menus the caller may see, in one of the app's locales.",
    shellBodySchema,
    SHELL_BODY_HEADERS,
  ),
  304: notModifiedResponse(SHELL_HEADERS),
  404: NO_SUCH_APP,
  ...API_ERRORS,
}
