import type { FastifyInstance } from 'fastify'
import { JSON_CONTENT_TYPE } from '../http/api-conventions.js'
import { renderOpenApiDocument } from '../openapi/document.js'
import { NO_TOKEN } from '../openapi/documented-requests.js'
import { jsonResponse, OTHER_ERRORS } from '../openapi/documented-responses.js'

/** The document, rendered on ready: the same bytes for all; a bad schema stops the start. */
export function registerOpenApiRoutes(app: FastifyInstance): void {
  let document: Buffer | undefined
  app.addHook('onReady', async () => {
    document = renderOpenApiDocument(app)
  })
  app.get('/openapi.json', { schema: openApiRoute }, (_request, reply) =>
    reply.header('content-type', JSON_CONTENT_TYPE).send(document),
  )
}

const openApiRoute = {
  operationId: 'getOpenApiDocument',
  summary: 'This document',
  security: NO_TOKEN,
  response: {
    200: jsonResponse('The OpenAPI document of the service.', {
      type: 'object',
      additionalProperties: true,
    }),
    default: OTHER_ERRORS,
  },
}
