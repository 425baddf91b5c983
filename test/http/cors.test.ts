import t, { type Test } from 'tap'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, type HttpResponse, httpRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { expectProblem } from '../helpers/problem.js'
import {
  createLogCapture,
  createSeededDatabase,
  signCaller,
  startTestService,
} from '../helpers/service.js'

/**
 * CORS over real HTTP, as a browser would send it: the headers on every
 * answer to a listed origin, preflights, origins that only look like a listed
 * one, and no CORS at all without CORS_ORIGINS.
 */

const PORTAL = 'https://portal.example.com'
const DEV = 'http://localhost:5173'
const logs = createLogCapture()
const db = await createSeededDatabase(t)
const { url, token } = await startTestService(t, {
  logs,
  db,
  // Written as an operator might: capitals and a default port still mean the origin browsers send.
  env: { CORS_ORIGINS: `HTTPS://Portal.Example.com:443, ${DEV}` },
})
const caller = await token({ roles: ['crm-sales'] })

/** Every `access-control-*` header of a response. */
function corsHeaders(response: HttpResponse): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(response.headers).filter(([name]) => name.startsWith('access-control-')),
  )
}

/** The marks of an answer to a listed origin, whatever its status; never credentials. */
function expectListed(t: Test, response: HttpResponse, origin: string, vary: string): void {
  t.same(
    corsHeaders(response),
    {
      'access-control-allow-origin': origin,
      'access-control-expose-headers': 'ETag, Content-Language, WWW-Authenticate, Retry-After',
    },
    `${response.status}: the origin and the exposed headers, nothing else`,
  )
  t.equal(response.headers.vary, vary, `${response.status}: Vary`)
}

function preflight(
  path: string,
  origin: string,
  requestHeaders = 'authorization,if-none-match',
): Promise<HttpResponse> {
  return httpRequest(url, path, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': 'GET',
      'access-control-request-headers': requestHeaders,
    },
  })
}

t.test('a listed origin: every status of the shell carries the headers', async (t) => {
  const vary = 'Authorization, Accept-Language, Accept-Encoding, Origin'
  const ok = await httpRequest(url, '/api/v1/shell/crm', bearer(caller, { origin: PORTAL }))
  t.equal(ok.status, 200)
  expectListed(t, ok, PORTAL, vary)
  t.equal(ok.headers['content-language'], 'en')

  const etag = String(ok.headers.etag)
  const notModified = await httpRequest(
    url,
    '/api/v1/shell/crm',
    bearer(caller, { origin: PORTAL, 'if-none-match': etag }),
  )
  t.equal(notModified.status, 304)
  t.equal(notModified.headers.etag, etag)
  expectListed(t, notModified, PORTAL, vary)

  const head = await httpRequest(url, '/api/v1/shell/crm', {
    method: 'HEAD',
    ...bearer(caller, { origin: DEV }),
  })
  t.equal(head.status, 200)
  expectListed(t, head, DEV, vary)

  const unauthorized = await httpRequest(url, '/api/v1/shell/crm', { headers: { origin: PORTAL } })
  expectProblem(t, unauthorized, 401)
  t.match(unauthorized.headers['www-authenticate'], /^Bearer realm="shell"/)
  // Errors of the route vary as its answers do: a cache must not hand one caller's 401 to another.
  expectListed(t, unauthorized, PORTAL, vary)

  const invalid = await httpRequest(url, '/api/v1/shell/crm', bearer('x.y.z', { origin: PORTAL }))
  expectProblem(t, invalid, 401)
  t.match(invalid.headers['www-authenticate'], /error="invalid_token"/)
  expectListed(t, invalid, PORTAL, vary)

  const unknownApp = await httpRequest(
    url,
    '/api/v1/shell/nope',
    bearer(caller, { origin: PORTAL }),
  )
  expectProblem(t, unknownApp, 404)
  expectListed(t, unknownApp, PORTAL, vary)
})

t.test('a listed origin: the inventory, unknown API paths, framework errors', async (t) => {
  const apps = await httpRequest(url, '/api/v1/apps', bearer(caller, { origin: PORTAL }))
  t.equal(apps.status, 200)
  expectListed(t, apps, PORTAL, 'Authorization, Accept-Encoding, Origin')
  const revalidated = await httpRequest(
    url,
    '/api/v1/apps',
    bearer(caller, { origin: PORTAL, 'if-none-match': String(apps.headers.etag) }),
  )
  t.equal(revalidated.status, 304)
  expectListed(t, revalidated, PORTAL, 'Authorization, Accept-Encoding, Origin')

  // The not-found handler, a path no route knows yet.
  const noRoute = await httpRequest(url, '/api/v1/users', bearer(caller, { origin: PORTAL }))
  expectProblem(t, noRoute, 404)
  expectListed(t, noRoute, PORTAL, 'Origin')

  // Answered by fastify's framework-error path, where no hook runs.
  const tooLong = await httpRequest(url, `/api/v1/shell/${'a'.repeat(150)}`, {
    headers: { origin: PORTAL },
  })
  expectProblem(t, tooLong, 404)
  expectListed(t, tooLong, PORTAL, 'Origin')
  const badUrl = await httpRequest(url, '/api/v1/shell/%zz', { headers: { origin: PORTAL } })
  expectProblem(t, badUrl, 400)
  expectListed(t, badUrl, PORTAL, 'Origin')

  // Other methods keep their 405, readable by the page.
  const post = await httpRequest(url, '/api/v1/apps', {
    method: 'POST',
    headers: { origin: PORTAL },
  })
  expectProblem(t, post, 405)
  t.equal(post.headers.allow, 'GET, HEAD')
  expectListed(t, post, PORTAL, 'Origin')
})

t.test('a listed origin: 503 with Retry-After readable by the page', async (t) => {
  const provider = await startJwksServer(t)
  const down = await startTestService(t, {
    logs,
    db,
    jwks: provider,
    env: { CORS_ORIGINS: PORTAL },
  })
  const signed = await signCaller(provider, { roles: ['crm-sales'] })
  provider.setAvailability('status-503')
  const response = await httpRequest(
    down.url,
    '/api/v1/shell/crm',
    bearer(signed, { origin: PORTAL }),
  )
  expectProblem(t, response, 503)
  t.ok(response.headers['retry-after'], 'Retry-After')
  expectListed(t, response, PORTAL, 'Authorization, Accept-Language, Accept-Encoding, Origin')
})

t.test('a listed origin: the event stream carries the headers', async (t) => {
  const stream = await openEventStream(url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${caller}`,
    origin: DEV,
  })
  t.teardown(() => stream.close())
  t.equal(stream.status, 200)
  t.equal(stream.headers['access-control-allow-origin'], DEV)
  t.equal(
    stream.headers['access-control-expose-headers'],
    'ETag, Content-Language, WWW-Authenticate, Retry-After',
  )
  t.equal(stream.headers.vary, 'Authorization, Accept-Language, Accept-Encoding, Origin')
  t.notOk(stream.headers['access-control-allow-credentials'])
  t.equal((await stream.waitForEvents(1)).event, 'shell')
})

t.test('preflight from a listed origin: 204 with methods, headers and max age', async (t) => {
  for (const path of ['/api/v1/shell/crm', '/api/v1/shell/crm/events', '/api/v1/apps']) {
    const response = await preflight(
      path,
      PORTAL,
      'authorization,if-none-match,accept-language,last-event-id',
    )
    t.equal(response.status, 204, path)
    t.equal(response.body.length, 0, 'no body')
    t.same(
      corsHeaders(response),
      {
        'access-control-allow-origin': PORTAL,
        'access-control-expose-headers': 'ETag, Content-Language, WWW-Authenticate, Retry-After',
        'access-control-allow-methods': 'GET, HEAD',
        'access-control-allow-headers':
          'Authorization, If-None-Match, Accept-Language, Last-Event-ID',
        'access-control-max-age': '600',
      },
      `${path}: never Access-Control-Allow-Credentials`,
    )
    t.equal(response.headers.vary, 'Origin')
  }
})

t.test('an OPTIONS without Access-Control-Request-Method is no preflight: 405', async (t) => {
  const response = await httpRequest(url, '/api/v1/shell/crm', {
    method: 'OPTIONS',
    headers: { origin: PORTAL },
  })
  expectProblem(t, response, 405)
  t.equal(response.headers.allow, 'GET, HEAD')
})

t.test('origins that only resemble a listed one are not listed', async (t) => {
  const lookalikes = [
    'http://portal.example.com',
    'https://portal.example.com:8443',
    'https://portal.example.com.attacker.test',
    'https://attacker-portal.example.com',
    'https://sub.portal.example.com',
    'https://portal.example.co',
    'https://portal.example.com/',
    'https://PORTAL.example.com',
    'http://localhost:5174',
    'http://localhost',
    'http://127.0.0.1:5173',
    'https://localhost:5173',
    'null',
    '*',
  ]
  for (const origin of lookalikes) {
    const response = await httpRequest(url, '/api/v1/shell/crm', bearer(caller, { origin }))
    t.equal(response.status, 200, `${origin}: answered as without CORS`)
    t.same(corsHeaders(response), {}, `${origin}: no CORS header`)
    const refused = await preflight('/api/v1/shell/crm', origin)
    expectProblem(t, refused, 403)
    t.same(corsHeaders(refused), {}, `${origin}: preflight refused with no CORS header`)
  }
})

t.test('requests without Origin, and paths outside the API, get no CORS header', async (t) => {
  const plain = await httpRequest(url, '/api/v1/shell/crm', bearer(caller))
  t.equal(plain.status, 200)
  t.same(corsHeaders(plain), {})
  // A cached answer to a request without Origin must not serve a page on another origin.
  t.equal(plain.headers.vary, 'Authorization, Accept-Language, Accept-Encoding, Origin')
  for (const path of ['/healthz', '/readyz', '/metrics']) {
    const response = await httpRequest(url, path, { headers: { origin: PORTAL } })
    t.equal(response.status, 200, path)
    t.same(corsHeaders(response), {}, `${path}: no CORS header`)
    expectProblem(t, await preflight(path, PORTAL), 404)
  }
})

t.test('without CORS_ORIGINS: OPTIONS is 405 and nothing is added', async (t) => {
  const plain = await startTestService(t, { logs, db })
  const signed = await plain.token({ roles: ['crm-sales'] })
  for (const path of ['/api/v1/shell/crm', '/api/v1/shell/crm/events', '/api/v1/apps']) {
    const response = await httpRequest(plain.url, path, {
      method: 'OPTIONS',
      headers: { origin: PORTAL, 'access-control-request-method': 'GET' },
    })
    expectProblem(t, response, 405)
    t.equal(response.headers.allow, 'GET, HEAD')
    t.same(corsHeaders(response), {}, path)
  }
  const shell = await httpRequest(
    plain.url,
    '/api/v1/shell/crm',
    bearer(signed, { origin: PORTAL }),
  )
  t.equal(shell.status, 200)
  t.same(corsHeaders(shell), {})
  t.equal(shell.headers.vary, 'Authorization, Accept-Language, Accept-Encoding')
  const apps = await httpRequest(plain.url, '/api/v1/apps', bearer(signed, { origin: PORTAL }))
  t.equal(apps.headers.vary, 'Authorization, Accept-Encoding')
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
