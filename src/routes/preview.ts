import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { AppLookup } from '../http/app-lookup.js'
import { refuseUnlessLocalSameOrigin } from '../http/local-same-origin.js'
import { problemSchema } from '../http/problem.js'
import { NOT_DOCUMENTED } from '../openapi/documented-requests.js'

/** The page's files: src/preview/, or dist/preview/ in the build (copied by `npm run build`). */
const PREVIEW_DIR = fileURLToPath(new URL('../preview/', import.meta.url))

/** Only the page's own files and this service; the branding's logo may be anywhere; no framing. */
const PAGE_SECURITY_POLICY = [
  "default-src 'self'",
  'img-src * data:',
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/**
 * Local mode: `GET /` draws any app's frame as a chosen user sees it, through the API; its files
 * under `/preview/` (@fastify/static: ETags, 304s, no path outside the folder); and
 * `GET /preview/granted-roles`, every app's granted roles (which the API does not list) for the
 * page's role picker. A tool for people, no part of the API: the OpenAPI document leaves it out.
 */
export function registerPreviewRoutes(app: FastifyInstance, deps: { lookup: AppLookup }): void {
  app.register(fastifyStatic, {
    root: PREVIEW_DIR,
    prefix: '/preview/',
    index: false,
    // Its own Cache-Control would let a browser keep an old page script for a while.
    cacheControl: false,
    setHeaders: setPageHeaders,
  })

  app.get('/', { schema: NOT_DOCUMENTED }, (_request, reply) => reply.sendFile('index.html'))

  app.get(
    '/preview/granted-roles',
    {
      onRequest: refuseUnlessLocalSameOrigin,
      preHandler: deps.lookup.snapshot,
      schema: { ...NOT_DOCUMENTED, response: grantedRolesResponses },
    },
    (request, reply) => {
      const { snapshot } = request
      const grantedRoles: Record<string, string[]> = {}
      for (const key of snapshot.appKeys)
        grantedRoles[key] = [...(snapshot.grantedRoles(key) ?? [])]
      return reply.header('cache-control', 'no-store').send({ grantedRoles })
    },
  )
}

/**
 * Revalidated on every load, never sniffed, held to the page's policy. Scripts as `text/javascript`
 * (RFC 9239), where @fastify/static's type table still says `application/javascript`.
 */
function setPageHeaders(reply: FastifyReply, path: string): void {
  if (path.endsWith('.js')) reply.header('content-type', 'text/javascript; charset=utf-8')
  reply
    .header('cache-control', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', PAGE_SECURITY_POLICY)
}

const grantedRolesResponses = {
  200: {
    type: 'object',
    required: ['grantedRoles'],
    properties: {
      grantedRoles: {
        type: 'object',
        additionalProperties: { type: 'array', items: { type: 'string' } },
      },
    },
  },
  403: problemSchema,
  503: problemSchema,
}
