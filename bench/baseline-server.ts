/**
 * The bare route: fastify sending the bytes and headers the service sent for
 * one real request, with no authentication and no lookup, so the ratio to it
 * is what the service's own work costs. `/verify-only/:appKey` runs jose's
 * `jwtVerify` on the Bearer token against the realm's key set held locally
 * and nothing else: the floor for a token never seen before.
 * `/verify-then-work/:workUs/:appKey` does the same and then keeps the
 * thread busy for workUs microseconds before it answers: what a fixed amount
 * of work of the service's own, beside jose's, costs on this machine.
 *
 * `node --import tsx bench/baseline-server.ts RESPONSES.json`, port from PORT.
 */
import { readFile } from 'node:fs/promises'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'

export interface RecordedResponse {
  /** Base64 of the body bytes. */
  readonly body: string
  /** The service's headers, less those fastify sets itself (length, date, connection). */
  readonly headers: Record<string, string>
}

export interface BaselineConfig {
  readonly shell: RecordedResponse
  readonly apps: RecordedResponse
  readonly verify: {
    readonly jwks: JSONWebKeySet
    readonly issuer: string
    readonly audience: string
  }
}

const config = JSON.parse(await readFile(process.argv[2] ?? '', 'utf8')) as BaselineConfig
const shellBody = Buffer.from(config.shell.body, 'base64')
const appsBody = Buffer.from(config.apps.body, 'base64')
const keySet = createLocalJWKSet(config.verify.jwks)
const verifyOptions = {
  issuer: config.verify.issuer,
  audience: config.verify.audience,
  algorithms: ['RS256'],
}

/** Keeps the thread busy, as the service's own work would, for `us` microseconds. */
function spin(us: number) {
  const until = performance.now() + us / 1000
  while (performance.now() < until) {
    // busy on purpose
  }
}

const app = Fastify({ logger: false })
app.get('/readyz', async () => ({ status: 'ready' }))
app.get('/api/v1/shell/:appKey', (_request, reply) => {
  reply.headers(config.shell.headers).send(shellBody)
})
app.get('/api/v1/apps', (_request, reply) => {
  reply.headers(config.apps.headers).send(appsBody)
})
async function verifyThenAnswer(token: string, workUs: number, reply: FastifyReply) {
  try {
    const { payload } = await jwtVerify(token, keySet, verifyOptions)
    if (workUs > 0) spin(workUs)
    return reply
      .type('application/json; charset=utf-8')
      .send(`{"sub":${JSON.stringify(payload.sub)}}`)
  } catch {
    return reply.code(401).send()
  }
}
const bearerOf = (request: FastifyRequest) =>
  request.headers.authorization?.slice('Bearer '.length) ?? ''
app.get('/verify-only/:appKey', (request, reply) => verifyThenAnswer(bearerOf(request), 0, reply))
app.get<{ Params: { workUs: string } }>('/verify-then-work/:workUs/:appKey', (request, reply) =>
  verifyThenAnswer(bearerOf(request), Number(request.params.workUs), reply),
)
await app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' })

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  // An orderly exit, so that --cpu-prof writes its profile.
  process.once(signal, () => void app.close().then(() => process.exit(0)))
}
