import t, { type Test } from 'tap'
import { type EventStreamClient, openEventStream } from '../helpers/event-stream-client.js'
import { createForcedShedding } from '../helpers/forced-shedding.js'
import { bearer, type HttpResponse, httpRequest } from '../helpers/http-client.js'
import { expectProblem } from '../helpers/problem.js'
import { createLogCapture, startTestService } from '../helpers/service.js'

/**
 * While its work stands in a queue the instance answers the API's excess at once: 503, the problem body,
 * Retry-After of a few seconds, drawn per answer, counted in shell_http_shed_total, with the
 * CORS and Vary headers of any other error; probes, metrics, the document and the client modules
 * are never shed, and open event streams go on. The test switches the shedding on itself; the
 * rule's timing is tested on a fake clock (standing-queue.test.ts), and a real burst in
 * burst.test.ts.
 */

const PORTAL = 'https://portal.example.com'
const shedding = createForcedShedding()
const logs = createLogCapture()
const { url, token, db } = await startTestService(t, {
  logs,
  env: { CORS_ORIGINS: PORTAL },
  standingQueue: shedding,
})
const caller = await token({ sub: 'sam', roles: ['crm-sales'] })
const SHELL = '/api/v1/shell/crm'
/** With CORS on, Origin is in Vary of every API answer, with or without an Origin header. */
const SHELL_VARY = 'Authorization, Accept-Language, Accept-Encoding, Origin'
const ROUTES = ['/api/v1/shell/:appKey', '/api/v1/shell/:appKey/events', '/api/v1/apps']

const streams: EventStreamClient[] = []
t.teardown(() => {
  for (const stream of streams) stream.close()
})

async function shedCount(route: string): Promise<number> {
  const text = (await httpRequest(url, '/metrics')).text
  const line = text
    .split('\n')
    .find((candidate) => candidate.startsWith(`shell_http_shed_total{route="${route}"} `))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}

const atLimit = (work: () => Promise<void>) => shedding.whileShedding(work)

function expectShed(t: Test, response: HttpResponse, vary: string): number {
  const body = expectProblem(t, response, 503)
  t.equal(body.type, 'urn:shell-data:problem:overloaded')
  t.equal(body.title, 'Overloaded')
  t.match(body.detail, /Retry-After/)
  t.equal(response.headers.vary, vary, "the route's Vary, as its other errors carry")
  const retryAfter = Number(response.headers['retry-after'])
  t.ok(retryAfter >= 2 && retryAfter <= 5, `Retry-After ${retryAfter}: 2 to 5 s`)
  return retryAfter
}

t.test('every API route counts from zero; no other route is counted', async (t) => {
  for (const route of ROUTES) t.equal(await shedCount(route), 0, route)
  const text = (await httpRequest(url, '/metrics')).text
  const counted = text.split('\n').filter((line) => line.startsWith('shell_http_shed_total{'))
  t.equal(counted.length, ROUTES.length, 'the API routes, and only them')
})

t.test('at the limit: 503 at once, the problem body, Retry-After of 2 to 5 s', async (t) => {
  const before = await shedCount(ROUTES[0] as string)
  const retryAfters = new Set<number>()
  await atLimit(async () => {
    for (let i = 0; i < 40; i += 1) {
      const response = await httpRequest(url, SHELL, bearer(caller))
      retryAfters.add(expectShed(t, response, SHELL_VARY))
    }
    const apps = await httpRequest(url, '/api/v1/apps', bearer(caller))
    expectShed(t, apps, 'Authorization, Accept-Encoding, Origin')
    const events = await httpRequest(url, `${SHELL}/events`, bearer(caller))
    expectShed(t, events, SHELL_VARY)
    // Shed before any work: the token is not even read.
    expectShed(t, await httpRequest(url, SHELL), SHELL_VARY)
  })
  t.ok(retryAfters.size > 1, `drawn per answer: ${[...retryAfters].sort().join(', ')}`)
  t.equal(await shedCount(ROUTES[0] as string), before + 41, 'each shed answer counted')
  t.equal(await shedCount(ROUTES[1] as string), 1)
  t.equal(await shedCount(ROUTES[2] as string), 1)
})

t.test('probes, metrics, the document and the client modules are never shed', async (t) => {
  await atLimit(async () => {
    for (const path of [
      '/healthz',
      '/readyz',
      '/metrics',
      '/openapi.json',
      '/client/v1/shell-client.js',
      '/client/v1/shell-frame.js',
    ]) {
      t.equal((await httpRequest(url, path)).status, 200, path)
    }
  })
})

t.test('a shed answer to a listed origin carries CORS, as other errors do', async (t) => {
  await atLimit(async () => {
    const response = await httpRequest(url, SHELL, bearer(caller, { origin: PORTAL }))
    expectShed(t, response, SHELL_VARY)
    t.equal(response.headers['access-control-allow-origin'], PORTAL)
    t.match(response.headers['access-control-expose-headers'], /\bRetry-After\b/)
  })
})

t.test('an open event stream goes on while new requests are shed', async (t) => {
  const stream = await openEventStream(url, `${SHELL}/events`, {
    authorization: `Bearer ${caller}`,
  })
  streams.push(stream)
  t.equal(stream.status, 200)
  await stream.waitForEvents(1)
  await atLimit(async () => {
    expectShed(t, await httpRequest(url, `${SHELL}/events`, bearer(caller)), SHELL_VARY)
    await db.sql`update shell.menu_items set label = 'Pipeline' where app_key = 'crm' and item_key = 'dashboard'`
    const event = await stream.waitForEvents(2)
    t.equal(event.event, 'shell', 'the change reaches the open stream')
  })
  t.notOk(stream.hasEnded(), 'still open')
})

t.test('while nothing stands in a queue every request goes through', async (t) => {
  for (let i = 0; i < 6; i += 1) {
    t.equal((await httpRequest(url, SHELL, bearer(caller))).status, 200, `request ${i + 1}`)
  }
  const metrics = (await httpRequest(url, '/metrics')).text
  t.match(metrics, /^shell_http_queue_standing 0$/m, 'the gauge says so')
})

t.test(
  'a shed answer closes its connection: a client that sends again must connect again',
  async (t) => {
    await atLimit(async () => {
      const response = await httpRequest(url, SHELL, bearer(caller))
      expectShed(t, response, SHELL_VARY)
      t.equal(response.headers.connection, 'close')
    })
  },
)
