import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import type { FastifyInstance, RouteOptions } from 'fastify'

/**
 * Before any route: @fastify/swagger learns the routes declared once it is loaded, so they are
 * declared in plugins registered after this.
 */
export function registerOpenApiDocument(app: FastifyInstance): void {
  app.register(swagger, OPENAPI_OPTIONS)
}

/** The document of every route declared, as `GET /openapi.json` serves it. */
export function renderOpenApiDocument(app: FastifyInstance): Buffer {
  return Buffer.from(JSON.stringify(markOptionalHeaders(app.swagger())))
}

/** Response headers sent only sometimes, which @fastify/swagger cannot say from a schema. */
const OPTIONAL_RESPONSE_HEADERS: ReadonlySet<string> = new Set(['Content-Encoding'])

function markOptionalHeaders<T>(document: T): T {
  const paths = (document as { paths?: Record<string, Record<string, unknown>> }).paths ?? {}
  for (const operation of Object.values(paths).flatMap((path) => Object.values(path))) {
    const responses = (operation as { responses?: Record<string, unknown> }).responses ?? {}
    for (const response of Object.values(responses)) {
      const headers = (response as { headers?: Record<string, { required?: boolean }> }).headers
      for (const [name, header] of Object.entries(headers ?? {})) {
        if (OPTIONAL_RESPONSE_HEADERS.has(name)) header.required = false
      }
    }
  }
  return document
}

const OPENAPI_OPTIONS: FastifyDynamicSwaggerOptions = {
  openapi: {
    // 3.0, not 3.1: client generators support it best; @fastify/swagger makes null `nullable`.
    openapi: '3.0.3',
    info: {
      title: 'Shell data service',
      version: '1',
      description: [
        'Everything a front-end shell needs to draw the common page frame of a registered app, filtered to what the calling user may see.',
        '',
        'Every GET route also answers HEAD: the same status and headers, no body. Errors are RFC 9457 problem details (`application/problem+json`); no error echoes the token.',
      ].join('\n'),
    },
    // Relative: the API is wherever this document was fetched from, whatever the host calls itself.
    servers: [{ url: '/' }],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An access token of the realm, signed with a key of its JWKS, for the audience the service accepts.',
        },
      },
    },
  },
  // The API answers GET and HEAD only: a route without GET (the 405s on the API's paths,
  // routes/api.ts) is no operation of it. A route's own swaggerTransform comes first.
  transform: ({ schema, url, route }) => ({
    url,
    schema: answersGet(route) ? schema : { ...schema, hide: true },
  }),
  // Shared schemas keep their own names (`menuItem`, `problem`) rather than def-0, def-1.
  refResolver: {
    buildLocalReference: (json, _baseUri, _fragment, index) =>
      typeof json.$id === 'string' ? json.$id : `def-${index}`,
  },
}

function answersGet(route: RouteOptions): boolean {
  return Array.isArray(route.method) ? route.method.includes('GET') : route.method === 'GET'
}
