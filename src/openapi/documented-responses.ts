import { LANGUAGE_TAG_PATTERN } from '../domain/vocabulary.js'
import {
  PRIVATE_NO_CACHE,
  VARY_BY_CALLER,
  VARY_BY_CALLER_AND_LANGUAGE,
} from '../http/api-conventions.js'
import { PROBLEM_CONTENT_TYPE } from '../http/problem.js'

/**
 * Responses as the OpenAPI document shows them: description, headers sent, body schema by media
 * type. Fastify reads only the body schemas, and only for the objects it serializes itself.
 */

/** A response header: a JSON schema of its value and a description, as @fastify/swagger reads it. */
interface HeaderSchema {
  readonly type: 'string' | 'integer'
  readonly description: string
  readonly pattern?: string
  readonly enum?: readonly string[]
  readonly minimum?: number
}
type Headers = Readonly<Record<string, HeaderSchema>>

/** The media type alone: parameters such as charset belong to the header, not the document's key. */
const JSON_MEDIA_TYPE = 'application/json'
const PROBLEM_MEDIA_TYPE = PROBLEM_CONTENT_TYPE.split(';')[0] as string

const etag: Headers = {
  ETag: {
    type: 'string',
    // A strong tag: quoted, no W/ prefix (RFC 9110 section 8.8.3).
    pattern: '^"[!#-~]*"$',
    description:
      'Strong tag of these bytes, derived from their content alone: the same on every instance and after restarts; each coding (br, gzip) has its own. Send it back in If-None-Match.',
  },
}
const privateNoCache: Headers = {
  'Cache-Control': {
    type: 'string',
    enum: [PRIVATE_NO_CACHE],
    description: 'Only the caller may keep the response, and must revalidate it before use.',
  },
}
const varyByCallerAndLanguage: Headers = {
  Vary: {
    type: 'string',
    pattern: `^${VARY_BY_CALLER_AND_LANGUAGE}`,
    description:
      'What is sent depends on the token, Accept-Language and Accept-Encoding (and Origin with CORS).',
  },
}
const contentLanguage: Headers = {
  'Content-Language': {
    type: 'string',
    pattern: LANGUAGE_TAG_PATTERN,
    description: "The locale chosen from Accept-Language among the app's locales.",
  },
}
const contentEncoding: Headers = {
  'Content-Encoding': {
    type: 'string',
    enum: ['br', 'gzip'],
    description:
      'How the body is compressed, when it is (absent: as it is). Each coding has its own ETag.',
  },
}

/** The headers of a shell answer, 200 and 304 alike: a 304 carries what the 200 would. */
export const SHELL_HEADERS: Headers = {
  ...etag,
  ...privateNoCache,
  ...varyByCallerAndLanguage,
  ...contentLanguage,
}

/** A 200 of the shell: its headers, and its coding. */
export const SHELL_BODY_HEADERS: Headers = { ...SHELL_HEADERS, ...contentEncoding }

/** The headers of an inventory answer, 200 and 304 alike; the inventory is not translated. */
export const INVENTORY_HEADERS: Headers = {
  ...etag,
  ...privateNoCache,
  Vary: {
    type: 'string',
    pattern: `^${VARY_BY_CALLER}`,
    description: 'The response depends on the token and Accept-Encoding (and Origin with CORS).',
  },
}

/** A 200 of the inventory: its headers, and its coding. */
export const INVENTORY_BODY_HEADERS: Headers = { ...INVENTORY_HEADERS, ...contentEncoding }

export const EVENT_STREAM_HEADERS: Headers = {
  'Cache-Control': {
    type: 'string',
    enum: ['no-cache'],
    description: 'Events are not to be stored.',
  },
  ...varyByCallerAndLanguage,
  ...contentLanguage,
}

export const RETRY_AFTER_HEADERS: Headers = {
  'Retry-After': {
    type: 'integer',
    minimum: 0,
    description: 'Seconds to wait before trying again.',
  },
}

/** A JSON body the route sends; `headers` are the ones the route always sends with it. */
export function jsonResponse(description: string, schema: object, headers: Headers = {}) {
  return bodyResponse(description, JSON_MEDIA_TYPE, schema, headers)
}

/** A body of another media type (an event stream, Prometheus text). */
export function textResponse(description: string, mediaType: string, headers: Headers = {}) {
  return bodyResponse(description, mediaType, { type: 'string' }, headers)
}

/** An RFC 9457 problem: `application/problem+json`, the shared problem schema. */
export function problemResponse(description: string, headers: Headers = {}) {
  return bodyResponse(description, PROBLEM_MEDIA_TYPE, { $ref: 'problem#' }, headers)
}

function bodyResponse(description: string, mediaType: string, schema: object, headers: Headers) {
  const response = { description, content: { [mediaType]: { schema } } }
  return Object.keys(headers).length === 0 ? response : { ...response, headers }
}

/** A 304: no body (`type: 'null'` is how @fastify/swagger leaves the content out). */
export function notModifiedResponse(headers: Headers) {
  const description = 'If-None-Match matched: the caller holds these bytes.'
  return { type: 'null', description, headers }
}

/** Any status an operation does not list: a URL fastify cannot decode, or an internal failure. */
export const OTHER_ERRORS = problemResponse(
  'Any other error: a request that is not valid, or a failure of the service.',
)

/** The errors every API operation may answer: a token refused, nothing to answer from yet. */
export const API_ERRORS = {
  401: problemResponse('No Bearer token, or one that fails verification.', {
    'WWW-Authenticate': {
      type: 'string',
      pattern: '^Bearer realm="shell"',
      description:
        'Bearer realm="shell"; with error="invalid_token" and an error_description when a token was sent and failed verification.',
    },
  }),
  503: problemResponse(
    "No snapshot is loaded yet, the identity provider's keys cannot be fetched, or the instance is answering as many requests as it can (try again after Retry-After, a few seconds).",
    RETRY_AFTER_HEADERS,
  ),
  default: OTHER_ERRORS,
}

/** An operation on one app: its key may name none. */
export const NO_SUCH_APP = problemResponse('No app has this key.')
