import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { negotiateCoding } from '../http/accept-encoding.js'
import { type CodedBody, createCodedBody } from '../http/coded-body.js'
import { contentTag } from '../http/content-tag.js'
import { matchesIfNoneMatch } from '../http/preconditions.js'

/**
 * Where `npm run build` puts the client modules (src/client/tsconfig.json):
 * dist/client under the package root, the same folder whether the service
 * runs from dist/ or from src/ under tsx (tests run the build first).
 */
const CLIENT_DIR = fileURLToPath(new URL('../../dist/client/', import.meta.url))

/** The modules served, by their name under /client/v1/ (CONTRACT.md, section 13). */
const MODULES = ['shell-client.js', 'shell-frame.js'] as const

/**
 * Public code, the same for everyone: shared caches may keep it, and a
 * release reaches open pages within five minutes, after which a browser
 * revalidates it with a 304.
 */
const CACHE_CONTROL = 'public, max-age=300'
const CONTENT_TYPE = 'text/javascript; charset=utf-8'
/** A module script from another origin is fetched in CORS mode; no credential is involved. */
const ANY_ORIGIN = '*'

/**
 * `GET /client/v1/shell-client.js` and `/client/v1/shell-frame.js`, on every
 * instance, without a token: the front end's half of the protocol. The bytes,
 * their br and gzip codings and the tags are made once, here, at start; a
 * build without the modules stops the start.
 */
export function registerClientModuleRoutes(app: FastifyInstance): void {
  for (const name of MODULES) {
    const coded = readModule(name)
    app.get(
      `/client/v1/${name}`,
      // Files, not operations of the API: the OpenAPI document leaves them out.
      { schema: { hide: true } },
      (request, reply) => sendModule(request, reply, coded),
    )
  }
}

function readModule(name: string): CodedBody {
  const path = join(CLIENT_DIR, name)
  let body: Buffer
  try {
    body = readFileSync(path)
  } catch (error) {
    throw new Error(`the client module ${path} is missing: run \`npm run build\``, {
      cause: error,
    })
  }
  const coded = createCodedBody(body, contentTag(body), 'snapshot')
  coded.in('br')
  coded.in('gzip')
  return coded
}

/** The module in the coding the request accepts best, or a 304 when it holds that coding's tag. */
function sendModule(request: FastifyRequest, reply: FastifyReply, coded: CodedBody): FastifyReply {
  const representation = coded.in(negotiateCoding(request.headers['accept-encoding']))
  reply
    .header('etag', representation.etag)
    .header('cache-control', CACHE_CONTROL)
    .header('vary', 'Accept-Encoding')
    .header('access-control-allow-origin', ANY_ORIGIN)
    .header('x-content-type-options', 'nosniff')
  if (matchesIfNoneMatch(request.headers['if-none-match'], representation.etag)) {
    return reply.code(304).send()
  }
  if (representation.coding !== 'identity') reply.header('content-encoding', representation.coding)
  return reply.type(CONTENT_TYPE).send(representation.body)
}
