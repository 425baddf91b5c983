import { readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { refuseUnlessLocalSameOrigin } from '../http/local-same-origin.js'
import { problemSchema, sendProblem } from '../http/problem.js'
import type { SnapshotSource } from '../snapshot/types.js'
import { sendNotReady } from './tagged-response.js'

/**
 * The preview page's files: `src/preview/` when run from the sources,
 * `dist/preview/` (copied there by `npm run build`) when run from the build.
 */
const PREVIEW_DIR = fileURLToPath(new URL('../preview/', import.meta.url))

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
}

/**
 * The page runs only its own files and talks only to this service; the
 * branding's logo may live anywhere. No other site may frame it.
 */
const PAGE_SECURITY_POLICY = [
  "default-src 'self'",
  'img-src * data:',
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

interface StaticFile {
  readonly body: Buffer
  readonly contentType: string
}

/**
 * Local mode: `GET /` draws any app's frame as a chosen user sees it, through
 * the API like any consumer; its scripts and styles under `/preview/`; and
 * `GET /preview/granted-roles`, every app's granted roles, which the API does
 * not list and the page offers as its role picker.
 */
/**
 * Left out of the OpenAPI document: a local-mode tool for people, no part of
 * the API, whose presence would make the document differ from production's.
 */
const HIDDEN = { hide: true }

export function registerPreviewRoutes(
  app: FastifyInstance,
  deps: { snapshots: SnapshotSource },
): void {
  const files = readPreviewFiles()
  const page = files.get('index.html')
  if (page === undefined) throw new Error(`the preview page is missing from ${PREVIEW_DIR}`)

  app.get('/', { schema: HIDDEN }, (_request, reply) => sendStatic(reply, page))

  app.get<{ Params: { file: string } }>('/preview/:file', { schema: HIDDEN }, (request, reply) => {
    const file = files.get(request.params.file)
    if (file === undefined || request.params.file === 'index.html')
      return sendProblem(reply, 'notFound', 'no such file of the preview page')
    return sendStatic(reply, file)
  })

  app.get(
    '/preview/granted-roles',
    {
      onRequest: refuseUnlessLocalSameOrigin,
      schema: { ...HIDDEN, response: grantedRolesResponses },
    },
    (_request, reply) => {
      const snapshot = deps.snapshots.current()
      if (snapshot === undefined) return sendNotReady(reply, deps.snapshots.notReadyReason())
      const grantedRoles: Record<string, string[]> = {}
      for (const key of snapshot.appKeys)
        grantedRoles[key] = [...(snapshot.app(key)?.grantedRoles ?? [])]
      return reply.header('cache-control', 'no-store').send({ grantedRoles })
    },
  )
}

/** Read once at start: a handful of small files, and a broken build shows at once. */
function readPreviewFiles(): Map<string, StaticFile> {
  const files = new Map<string, StaticFile>()
  for (const name of readdirSync(PREVIEW_DIR)) {
    const contentType = CONTENT_TYPES[extname(name)]
    if (contentType !== undefined)
      files.set(name, { body: readFileSync(join(PREVIEW_DIR, name)), contentType })
  }
  return files
}

function sendStatic(reply: FastifyReply, file: StaticFile): FastifyReply {
  return reply
    .header('content-type', file.contentType)
    .header('cache-control', 'no-cache')
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', PAGE_SECURITY_POLICY)
    .send(file.body)
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
