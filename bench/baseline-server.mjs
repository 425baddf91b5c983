/**
 * The bare route: fastify sending the bytes and headers the service sent
 * for one real request, written as a user of fastify would write it
 * (`reply.header` per header, `.type`, `.send` of a Buffer), with no
 * authentication and no lookup, so the ratio to it is what the service's own
 * work costs. `/verify-only/:appKey` runs jose's `jwtVerify` on the Bearer
 * token against the realm's key set held locally and nothing else: the floor
 * for a token never seen before.
 *
 * Plain JavaScript run by plain `node bench/baseline-server.mjs RESPONSES.json`
 * (port from PORT), as the service runs from dist/: no loader in between.
 */
import { readFile } from 'node:fs/promises'
import Fastify from 'fastify'
import { createLocalJWKSet, jwtVerify } from 'jose'

const config = JSON.parse(await readFile(process.argv[2] ?? '', 'utf8'))
const shell = recorded(config.shell)
const apps = recorded(config.apps)
const keySet = createLocalJWKSet(config.verify.jwks)
const verifyOptions = {
  issuer: config.verify.issuer,
  audience: config.verify.audience,
  algorithms: ['RS256'],
}

/** The recorded body, its content type, and its other headers (fastify sets length and date). */
function recorded({ body, headers }) {
  const { 'content-type': type, ...others } = headers
  return { body: Buffer.from(body, 'base64'), type, headers: Object.entries(others) }
}

function replay(reply, response) {
  for (const [name, value] of response.headers) reply.header(name, value)
  return reply.type(response.type).send(response.body)
}

const app = Fastify({ logger: false })
app.get('/readyz', async () => ({ status: 'ready' }))
// The other paths the overload scenario probes, as cheap as can be: what plain fastify answers.
app.get('/healthz', async () => ({ status: 'ok' }))
app.get('/metrics', async () => '')
app.get('/api/v1/shell/:appKey', (_request, reply) => replay(reply, shell))
app.get('/api/v1/apps', (_request, reply) => replay(reply, apps))
app.get('/verify-only/:appKey', async (request, reply) => {
  try {
    const token = request.headers.authorization?.slice('Bearer '.length) ?? ''
    const { payload } = await jwtVerify(token, keySet, verifyOptions)
    return reply
      .type('application/json; charset=utf-8')
      .send(`{"sub":${JSON.stringify(payload.sub)}}`)
  } catch {
    return reply.code(401).send()
  }
})
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })

for (const signal of ['SIGTERM', 'SIGINT']) {
  // An orderly exit, so that --cpu-prof writes its profile.
  process.once(signal, () => void app.close().then(() => process.exit(0)))
}
