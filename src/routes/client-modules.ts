import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance } from 'fastify'
import { CODINGS, type Coding } from '../http/accept-encoding.js'
import type { Negotiation } from '../http/negotiation.js'
import { encodeRepresentation, type Representation } from '../http/representation.js'
import { sendRepresentation } from '../http/send-representation.js'
import { NOT_DOCUMENTED } from '../openapi/documented-requests.js'
import { contentTag } from '../snapshot/content-tag.js'

/**
 * Where `npm run build:client` puts the minified modules and their source maps (the package's
 * readable copies are in dist/client itself), from dist/ or src/.
 */
const SERVED_DIR = fileURLToPath(new URL('../../dist/client/served/', import.meta.url))

/** The files served, by their name under /client/v1/ (docs/client.md). */
const FILES = [
  { name: 'shell-client.js', contentType: 'text/javascript; charset=utf-8' },
  { name: 'shell-frame.js', contentType: 'text/javascript; charset=utf-8' },
  // Named by each module's last line, for a browser's developer tools: the sources they were made from.
  { name: 'shell-client.js.map', contentType: 'application/json; charset=utf-8' },
  { name: 'shell-frame.js.map', contentType: 'application/json; charset=utf-8' },
] as const

/** Public: shared caches may keep it. 300 s: a release reaches open pages within five minutes. */
const CACHE_CONTROL = 'public, max-age=300'

/**
 * The front end's half of the protocol, without a token. Bytes, codings and tags are made at start
 * (a build without the modules stops it). Files, not API operations: not in the OpenAPI document.
 */
export function registerClientModuleRoutes(
  app: FastifyInstance,
  deps: { readonly negotiation: Negotiation },
): void {
  for (const { name, contentType } of FILES) {
    const representations = encodeFile(name)
    app.get(`/client/v1/${name}`, { schema: NOT_DOCUMENTED }, (request, reply) => {
      const coding = deps.negotiation.coding(request.headers['accept-encoding'])
      reply
        .header('cache-control', CACHE_CONTROL)
        .header('vary', 'Accept-Encoding')
        // A module script from another origin is fetched in CORS mode; no credential is involved.
        .header('access-control-allow-origin', '*')
        .header('x-content-type-options', 'nosniff')
      return sendRepresentation(request, reply, representations[coding], contentType)
    })
  }
}

function encodeFile(name: string): Record<Coding, Representation> {
  const path = join(SERVED_DIR, name)
  let body: Buffer
  try {
    body = readFileSync(path)
  } catch (error) {
    throw new Error(`the client file ${path} is missing: run \`npm run build\``, {
      cause: error,
    })
  }
  const module = { tag: contentTag(body), byteLength: body.length, bytes: () => body }
  return Object.fromEntries(
    CODINGS.map((coding) => [coding, encodeRepresentation(module, coding)]),
  ) as Record<Coding, Representation>
}
