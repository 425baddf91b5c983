import t, { type Test } from 'tap'
import { findFreePort } from '../src/embedded/embedded.js'
import { createForcedShedding } from './helpers/forced-shedding.js'
import { bearer, type HttpResponse, httpRequest, rawRequest } from './helpers/http-client.js'
import { startJwksServer } from './helpers/jwks-server.js'
import { expectProblem } from './helpers/problem.js'
import {
  createLogCapture,
  createSeededDatabase,
  signCaller,
  startTestService,
} from './helpers/service.js'
import { spawnService } from './helpers/service-process.js'
import { waitFor } from './helpers/wait.js'

/**
 * ADMIN_PORT (src/admin-app.ts): a second listener on the same host that serves `/healthz`,
 * `/readyz` and `/metrics` and nothing else; with it set `/metrics` leaves PORT, the probes stay
 * on both, neither port's probes are shed, and a shutdown's delay answers `/readyz` 503 on both.
 */

const db = await createSeededDatabase(t)
const jwks = await startJwksServer(t)
const logs = createLogCapture()
/** Shedding the test switches on itself, as test/http/shed-excess.test.ts does. */
const shedding = createForcedShedding()
const { service, url } = await startTestService(t, {
  logs,
  db,
  jwks,
  env: { ADMIN_PORT: '0' },
  standingQueue: shedding,
})
if (service.adminUrl === undefined) throw new Error('ADMIN_PORT set, but no admin address')
const adminUrl = service.adminUrl
const caller = await signCaller(jwks, { roles: ['crm-sales'] })

/** The routes of the API's port that the admin port must not serve, with every method's 404. */
const NOT_ON_ADMIN = [
  '/api/v1/apps',
  '/api/v1/shell/crm',
  '/api/v1/shell/crm/events',
  '/openapi.json',
  '/client/v1/shell-client.js',
  '/',
  '/healthz/',
  '/metrics/x',
  '/no/such/route',
]

function expectNotFound(t: Test, response: HttpResponse, path: string): void {
  const body = expectProblem(t, response, 404)
  t.equal(body.type, 'urn:shell-data:problem:not-found', path)
  t.match(body.detail, `no route GET ${path}`)
}

t.test('the admin port serves the probes and the metrics, on the same host', async (t) => {
  t.match(adminUrl, /^http:\/\/127\.0\.0\.1:\d+$/)
  t.not(adminUrl, url, 'a port of its own')
  const health = await httpRequest(adminUrl, '/healthz')
  t.equal(health.status, 200)
  t.strictSame(health.json(), { status: 'ok' })
  const ready = await httpRequest(adminUrl, '/readyz')
  t.equal(ready.status, 200)
  t.strictSame(ready.json(), (await httpRequest(url, '/readyz')).json(), "the API port's readiness")
  const head = await rawRequest(
    adminUrl,
    'HEAD /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  )
  t.equal(head.status, 200, 'HEAD too')
  t.equal(head.body.length, 0, 'with no body')

  // The same registry: an answer on the API's port is counted in the admin port's metrics.
  t.equal((await httpRequest(url, '/api/v1/apps', bearer(caller))).status, 200)
  const metrics = await httpRequest(adminUrl, '/metrics')
  t.equal(metrics.status, 200)
  t.match(metrics.headers['content-type'], /^text\/plain/)
  t.match(metrics.text, /^shell_snapshot_loaded 1$/m)
  t.match(
    metrics.text,
    /^shell_http_request_duration_seconds_count\{route="\/api\/v1\/apps",method="GET",status_code="200"\} 1$/m,
  )
})

t.test('anything else on the admin port is a 404 problem, as on the API port', async (t) => {
  for (const path of NOT_ON_ADMIN) {
    const response = await httpRequest(adminUrl, path, bearer(caller))
    expectNotFound(t, response, path)
  }
  const sameOnApi = await httpRequest(url, '/no/such/route')
  t.strictSame(
    (await httpRequest(adminUrl, '/no/such/route')).json(),
    sameOnApi.json(),
    "the API port's 404 body",
  )
  const head = await rawRequest(
    adminUrl,
    'HEAD /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  )
  t.equal(head.status, 404, 'HEAD of another path: 404')
  t.equal(head.body.length, 0, 'with no body')
  for (const method of ['POST', 'DELETE']) {
    const response = await httpRequest(adminUrl, '/metrics', { method })
    t.equal(response.status, 404, `${method} /metrics: 404`)
  }
  const malformed = await rawRequest(
    adminUrl,
    'GET /%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
  )
  expectProblem(t, malformed, 400)
})

t.test('with ADMIN_PORT set, /metrics leaves the API port and its document', async (t) => {
  expectNotFound(t, await httpRequest(url, '/metrics'), '/metrics')
  t.equal((await httpRequest(url, '/healthz')).status, 200, 'the probes stay on PORT')
  t.equal((await httpRequest(url, '/readyz')).status, 200)
  const document = (await httpRequest(url, '/openapi.json')).json<{
    paths: Record<string, { get?: { description?: string } }>
  }>()
  t.notOk(document.paths['/metrics'], 'the document has no /metrics')
  t.match(document.paths['/readyz']?.get?.description, /ADMIN_PORT/)
})

t.test('without ADMIN_PORT, /metrics is on the API port and in its document', async (t) => {
  const plain = await startTestService(t, { logs, db, jwks })
  t.equal(plain.service.adminUrl, undefined)
  const metrics = await httpRequest(plain.url, '/metrics')
  t.equal(metrics.status, 200)
  t.match(metrics.text, /^shell_snapshot_loaded 1$/m)
  const document = (await httpRequest(plain.url, '/openapi.json')).json<{
    paths: Record<string, { get?: { description?: string } }>
  }>()
  t.match(document.paths['/metrics']?.get?.description, /ADMIN_PORT/, 'says where it may go')
})

t.test('probes on either port and the metrics are never shed', async (t) => {
  await shedding.whileShedding(async () => {
    t.equal((await httpRequest(url, '/api/v1/apps', bearer(caller))).status, 503, 'the API sheds')
    for (const path of ['/healthz', '/readyz']) {
      t.equal((await httpRequest(url, path)).status, 200, `${path} on PORT`)
      t.equal((await httpRequest(adminUrl, path)).status, 200, `${path} on ADMIN_PORT`)
    }
    t.equal((await httpRequest(adminUrl, '/metrics')).status, 200, '/metrics on ADMIN_PORT')
  })
})

t.test('the start log names both addresses', async (t) => {
  const line = logs.lines.find((candidate) => candidate.includes(`"adminUrl":"${adminUrl}"`))
  t.ok(line, 'a line with the admin address')
  t.match(JSON.parse(line ?? '{}'), {
    url,
    msg: `listening on ${url}, probes and /metrics on ${adminUrl}`,
  })
})

t.test('before the first snapshot, both ports say not ready', async (t) => {
  const closedPort = await findFreePort()
  const waiting = await startTestService(t, {
    logs,
    db,
    jwks,
    env: {
      ADMIN_PORT: '0',
      DATABASE_URL: `postgres://nobody:secret@127.0.0.1:${closedPort}/nothing`,
      MIGRATE: 'off',
    },
    waitForSnapshot: false,
  })
  const admin = waiting.service.adminUrl ?? ''
  const ready = await httpRequest(admin, '/readyz')
  t.equal(ready.status, 503)
  t.equal(ready.json().status, 'not_ready')
  t.equal((await httpRequest(waiting.url, '/readyz')).status, 503)
  t.equal((await httpRequest(admin, '/healthz')).status, 200, 'alive meanwhile')
})

t.test('shutdown: /readyz 503 on the admin port during the delay, then it closes', async (t) => {
  const stopping = await startTestService(t, { logs, db, jwks, env: { ADMIN_PORT: '0' } })
  const admin = stopping.service.adminUrl ?? ''
  const shutdown = stopping.service.shutdown({ delayMs: 1_000 })
  const ready = await httpRequest(admin, '/readyz')
  t.equal(ready.status, 503, 'not ready at once')
  t.same(ready.json(), { status: 'not_ready', reason: 'shutting down' })
  t.equal((await httpRequest(admin, '/healthz')).status, 200, 'alive during the delay')
  t.equal((await httpRequest(admin, '/metrics')).status, 200, 'scraped during the delay')
  await shutdown
  for (const base of [admin, stopping.url]) {
    const after = await httpRequest(base, '/healthz').catch((error: NodeJS.ErrnoException) => error)
    t.match(after, { code: 'ECONNREFUSED' }, `${base} is closed`)
  }
})

t.test('a started process listens on both ports and stops on SIGTERM', async (t) => {
  const [port, adminPort] = [await findFreePort(), await findFreePort()]
  const child = spawnService(t, {
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    OIDC_ISSUER: jwks.issuer,
    OIDC_AUDIENCE: 'shell-data',
    SHUTDOWN_DELAY_S: '2',
  })
  const api = `http://127.0.0.1:${port}`
  const admin = `http://127.0.0.1:${adminPort}`
  const started = await child.waitForLine((line) => line.adminUrl !== undefined, 'the start log')
  t.equal(started.adminUrl, admin)
  t.equal(started.url, api)
  await waitFor(
    async () => (await httpRequest(admin, '/readyz').catch(() => undefined))?.status === 200,
    'ready on the admin port',
    45_000,
  )
  t.equal((await httpRequest(api, '/readyz')).status, 200, 'and on PORT')
  t.equal((await httpRequest(admin, '/metrics')).status, 200)
  t.equal((await httpRequest(api, '/metrics')).status, 404)
  child.child.kill('SIGTERM')
  await waitFor(
    async () => (await httpRequest(admin, '/readyz')).status === 503,
    '/readyz 503 on the admin port',
  )
  t.same(await child.exited, { code: 0, signal: null }, 'exit 0')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
