import type { FastifyContextConfig } from 'fastify'
import { APP_KEY_PATTERN } from '../domain/vocabulary.js'

/**
 * Request parameters for the OpenAPI document only, through each route's transform: in its schema
 * fastify would validate them per request (hot path), with a 400 where an unknown app key gets 404.
 */

/**
 * A route's schema that leaves it out of the document: local-mode helpers and 405s are no part of
 * the API, and would make the document differ between local mode and production.
 */
export const NOT_DOCUMENTED = { hide: true }

/** The security requirement of the API: a Bearer token (components.securitySchemes.bearer). */
export const BEARER_TOKEN = [{ bearer: [] }]
/** Stated rather than left out, so that no reader or linter takes the route for an oversight. */
export const NO_TOKEN = []

export const APP_KEY_PARAMS = {
  type: 'object',
  required: ['appKey'],
  properties: {
    appKey: {
      type: 'string',
      pattern: APP_KEY_PATTERN,
      description: 'Key of a registered app; a key that names no app gets 404.',
    },
  },
}

const ifNoneMatch = {
  type: 'string',
  description:
    'ETags the caller holds (a list, compared weakly, or *): a match gets 304 with no body.',
}
const acceptLanguage = {
  type: 'string',
  description:
    "Preferred languages (RFC 9110); the response is in the best of the app's locales, else its default. A header that does not parse counts as absent.",
}
const acceptEncoding = {
  type: 'string',
  description:
    'Codings the caller takes (RFC 9110): br or gzip, whichever has the highest q (br on a tie), else the body as it is. Bodies under 1,024 bytes are never compressed. A header that does not parse counts as absent.',
}

export const SHELL_REQUEST_HEADERS = headerObject({
  'If-None-Match': ifNoneMatch,
  'Accept-Language': acceptLanguage,
  'Accept-Encoding': acceptEncoding,
})
export const EVENTS_REQUEST_HEADERS = headerObject({
  'Accept-Language': acceptLanguage,
  'Accept-Encoding': {
    type: 'string',
    description:
      'The stream is never compressed, but its events carry the ETag that a GET of the shell with this Accept-Encoding returns.',
  },
  'Last-Event-ID': {
    type: 'string',
    description:
      'The id of the last shell event the client saw: no first event when it is current.',
  },
})
export const INVENTORY_REQUEST_HEADERS = headerObject({
  'If-None-Match': ifNoneMatch,
  'Accept-Encoding': acceptEncoding,
})

/** Route config that adds these parameters to the route's operation in the document. */
export function documentRequest(request: {
  params?: object
  headers?: object
}): FastifyContextConfig {
  return { swaggerTransform: ({ schema, url }) => ({ url, schema: { ...schema, ...request } }) }
}

function headerObject(properties: Record<string, object>) {
  return { type: 'object', properties }
}
