import { pino } from 'pino'
import t from 'tap'
import { buildApp } from '../src/app.js'
import { createTokenVerifier } from '../src/auth/verify-token.js'
import { createMetrics } from '../src/metrics.js'
import { buildCaller } from '../src/snapshot/caller.js'

/**
 * Client errors that fastify raises itself keep their own status, as
 * problem+json with the status's phrase as title. No route of the service
 * takes a body, so the test adds one: the error handler is the app's, for
 * every route.
 */

const logger = pino({ level: 'silent' })
const metrics = createMetrics({ defaultMetrics: false })
const verifier = createTokenVerifier({
  toCaller: buildCaller,
  oidc: {
    issuer: 'http://127.0.0.1:9/realms/none',
    audiences: ['shell-data'],
    discoveryUrl: 'http://127.0.0.1:9/realms/none',
    jwksUrl: null,
    rolesPaths: [['realm_access', 'roles']],
    clockToleranceS: 30,
    jwksCooldownS: 30,
    jwksMaxAgeS: 600,
  },
  cacheMax: 10,
  failureLog: false,
  logger,
  metrics,
})
const app = buildApp({
  logger,
  metrics,
  verifier,
  snapshots: {
    current: () => undefined,
    origin: () => undefined,
    notReadyReason: () => 'test',
    confirmedAt: () => undefined,
    onSwap: () => () => undefined,
  },
  logRequests: false,
  eventStreamsMax: 10,
  isShuttingDown: () => false,
})
app.post('/test-body', { bodyLimit: 1024 }, async (request) => ({ received: request.body }))
const base = await app.listen({ port: 0, host: '127.0.0.1' })
t.teardown(async () => {
  await app.close()
  verifier.close()
})

const cases: [string, number, string, RequestInit][] = [
  [
    'a body past the route limit',
    413,
    'Payload Too Large',
    {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(4096) }),
    },
  ],
  [
    'a media type no parser takes',
    415,
    'Unsupported Media Type',
    { headers: { 'content-type': 'application/xml' }, body: '<a/>' },
  ],
  [
    'JSON that does not parse',
    400,
    'Bad Request',
    { headers: { 'content-type': 'application/json' }, body: '{"unclosed' },
  ],
]

for (const [name, status, title, init] of cases) {
  t.test(`${name}: ${status}, problem+json`, async (t) => {
    const response = await fetch(`${base}/test-body`, { method: 'POST', ...init })
    t.equal(response.status, status)
    t.match(response.headers.get('content-type'), /^application\/problem\+json/)
    const body = (await response.json()) as Record<string, unknown>
    t.same(Object.keys(body).sort(), ['detail', 'status', 'title', 'type'])
    t.equal(body.status, status)
    t.equal(body.title, title)
    t.equal(body.type, 'about:blank')
  })
}

t.test('the route itself still works', async (t) => {
  const response = await fetch(`${base}/test-body`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"a":1}',
  })
  t.equal(response.status, 200)
  t.same(await response.json(), { received: { a: 1 } })
})
