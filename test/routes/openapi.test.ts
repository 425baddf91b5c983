import { gunzipSync } from 'node:zlib'
import SwaggerParser from '@apidevtools/swagger-parser'
import t from 'tap'
import { openEventStream } from '../helpers/event-stream-client.js'
import { bearer, type HttpResponse, httpRequest } from '../helpers/http-client.js'
import {
  createResponseChecker,
  type ObservedResponse,
  type OpenApiDocument,
} from '../helpers/openapi-document.js'
import {
  createLogCapture,
  startServiceWithoutDatabase,
  startTestService,
} from '../helpers/service.js'

/**
 * GET /openapi.json: the document @fastify/swagger generates from the route
 * schemas passes a standard validator, names every route of the API
 * with its parameters and security, and the service's real responses, one
 * per status it can be brought to, validate against what it declares.
 */

const logs = createLogCapture()
const { url, token, jwks, db, service } = await startTestService(t, { logs })
const served = await httpRequest(url, '/openapi.json')
const document = served.json<OpenApiDocument>()
const checker = createResponseChecker(document)

const SHELL = '/api/v1/shell/{appKey}'
const EVENTS = '/api/v1/shell/{appKey}/events'
const APPS = '/api/v1/apps'
const API_PATHS = [SHELL, EVENTS, APPS]
const UNAUTHENTICATED_PATHS = ['/healthz', '/readyz', '/metrics', '/openapi.json']

function observed(response: HttpResponse): ObservedResponse {
  return { status: response.status, headers: response.headers, body: response.text }
}

t.test('served without a token, as JSON, the same bytes whoever asks', async (t) => {
  t.equal(served.status, 200)
  t.equal(served.headers['content-type'], 'application/json; charset=utf-8')
  const withCaller = await httpRequest(
    url,
    '/openapi.json',
    bearer(await token({ roles: ['crm-admin'] }), { 'accept-language': 'de' }),
  )
  t.equal(withCaller.status, 200)
  t.ok(withCaller.body.equals(served.body), 'the document does not depend on the request')
})

t.test('passes a standard OpenAPI validator', async (t) => {
  t.match(document.openapi, /^3\.0\.\d+$/, 'OpenAPI 3.0')
  // The parser dereferences what it validates: it gets a copy.
  await t.resolves(SwaggerParser.validate(structuredClone(document) as never))
})

t.test('the validator catches a broken document', async (t) => {
  const broken = structuredClone(document) as unknown as {
    paths: Record<string, { get: { responses: Record<string, { description?: string }> } }>
  }
  const ok = broken.paths[SHELL]?.get.responses['200']
  delete ok?.description
  await t.rejects(
    SwaggerParser.validate(broken as never),
    /must have required property 'description'/,
    'a response without its description',
  )
})

t.test('every route of the API, GET only, with its parameters', async (t) => {
  t.same(Object.keys(document.paths).sort(), [...API_PATHS, ...UNAUTHENTICATED_PATHS].sort())
  for (const [path, item] of Object.entries(document.paths)) {
    // HEAD mirrors GET (fastify answers it for every GET route): listing it would double each operation.
    t.same(Object.keys(item), ['get'], `${path}: GET only, no 405 routes, no HEAD`)
  }
  for (const path of [SHELL, EVENTS]) {
    const appKey = document.paths[path]?.get?.parameters?.find((p) => p.name === 'appKey')
    t.match(appKey, { in: 'path', required: true, schema: { type: 'string' } }, `${path}: appKey`)
  }
  const headerNames = (path: string) =>
    (document.paths[path]?.get?.parameters ?? [])
      .filter((p) => p.in === 'header')
      .map((p) => p.name)
  t.same(headerNames(SHELL), ['If-None-Match', 'Accept-Language', 'Accept-Encoding'])
  t.same(headerNames(EVENTS), ['Accept-Language', 'Accept-Encoding', 'Last-Event-ID'])
  t.same(headerNames(APPS), ['If-None-Match', 'Accept-Encoding'])
})

t.test('the Bearer scheme on the API, not on the probes', async (t) => {
  t.same(Object.keys(document.components.securitySchemes), ['bearer'])
  t.match(document.components.securitySchemes.bearer, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
  })
  t.equal(document.security, undefined, 'no document-wide requirement')
  for (const path of API_PATHS)
    t.same(document.paths[path]?.get?.security, [{ bearer: [] }], `${path}: Bearer`)
  for (const path of UNAUTHENTICATED_PATHS)
    t.same(document.paths[path]?.get?.security, [], `${path}: no token`)
})

t.test('every status docs/api.md names, with the headers it pins', async (t) => {
  const statuses = (path: string) => Object.keys(document.paths[path]?.get?.responses ?? {})
  t.same(statuses(SHELL), ['200', '304', '401', '404', '503', 'default'])
  t.same(statuses(EVENTS), ['200', '401', '404', '503', 'default'])
  t.same(statuses(APPS), ['200', '304', '401', '503', 'default'])
  t.same(statuses('/readyz'), ['200', '503', 'default'])
  const headers = (path: string, status: string) =>
    Object.keys(document.paths[path]?.get?.responses[status]?.headers ?? {})
  t.same(headers(SHELL, '200'), [
    'ETag',
    'Cache-Control',
    'Vary',
    'Content-Language',
    'Content-Encoding',
  ])
  t.same(headers(SHELL, '304'), ['ETag', 'Cache-Control', 'Vary', 'Content-Language'])
  t.same(headers(APPS, '200'), ['ETag', 'Cache-Control', 'Vary', 'Content-Encoding'])
  t.equal(
    document.paths[SHELL]?.get?.responses['200']?.headers?.['Content-Encoding']?.required,
    false,
    'Content-Encoding: only when compressed',
  )
  t.same(headers(EVENTS, '200'), ['Cache-Control', 'Vary', 'Content-Language'])
  for (const path of API_PATHS) {
    t.same(headers(path, '401'), ['WWW-Authenticate'], `${path} 401`)
    t.same(headers(path, '503'), ['Retry-After'], `${path} 503`)
  }
  t.same(
    Object.keys(document.paths[SHELL]?.get?.responses['401']?.content ?? {}),
    ['application/problem+json'],
    'problems under their own media type',
  )
})

t.test('the check of a body can fail', async (t) => {
  const sent = (await httpRequest(url, '/api/v1/shell/crm', bearer(await token()))).json()
  t.same(checker.bodyErrors(SHELL, '200', 'application/json', sent), [], 'as sent: valid')
  const { locale: _locale, ...withoutLocale } = sent
  t.notSame(
    checker.bodyErrors(SHELL, '200', 'application/json', withoutLocale),
    [],
    'a key missing',
  )
  t.notSame(
    checker.bodyErrors(SHELL, '200', 'application/json', { ...sent, extra: 1 }),
    [],
    'a key the document does not name',
  )
})

t.test('real responses of the shell and the inventory validate', async (t) => {
  const caller = await token({ roles: ['crm-sales'] })
  const shell = await httpRequest(
    url,
    '/api/v1/shell/crm',
    bearer(caller, { 'accept-language': 'de' }),
  )
  t.equal(shell.headers['content-language'], 'de')
  checker.check(t, SHELL, observed(shell))
  const compressed = await httpRequest(
    url,
    '/api/v1/shell/crm',
    bearer(caller, { 'accept-language': 'de', 'accept-encoding': 'gzip' }),
  )
  t.equal(compressed.headers['content-encoding'], 'gzip')
  checker.check(t, SHELL, { ...observed(compressed), body: gunzipSync(compressed.body).toString() })
  const etag = String(shell.headers.etag)
  const shell304 = await httpRequest(
    url,
    '/api/v1/shell/crm',
    bearer(caller, { 'accept-language': 'de', 'if-none-match': etag }),
  )
  t.equal(shell304.status, 304)
  checker.check(t, SHELL, observed(shell304))
  checker.check(t, SHELL, observed(await httpRequest(url, '/api/v1/shell/crm')))
  checker.check(
    t,
    SHELL,
    observed(await httpRequest(url, '/api/v1/shell/crm', bearer('not.a.token'))),
  )
  checker.check(t, SHELL, observed(await httpRequest(url, '/api/v1/shell/nope', bearer(caller))))
  // A path fastify cannot decode is refused before any route: the operation's default.
  const undecodable = await httpRequest(url, '/api/v1/shell/%E0%A4%A', bearer(caller))
  t.equal(undecodable.status, 400)
  checker.check(t, SHELL, observed(undecodable))

  const apps = await httpRequest(url, '/api/v1/apps', bearer(caller))
  checker.check(t, APPS, observed(apps))
  t.ok(
    apps.body.equals(service.feed.current()?.appsInventory.bytes() ?? Buffer.alloc(0)),
    'the inventory is sent as precomputed, not serialized from its schema',
  )
  const apps304 = await httpRequest(
    url,
    '/api/v1/apps',
    bearer(caller, { 'if-none-match': String(apps.headers.etag) }),
  )
  t.equal(apps304.status, 304)
  checker.check(t, APPS, observed(apps304))
  checker.check(t, APPS, observed(await httpRequest(url, '/api/v1/apps')))
})

t.test('real responses of the event stream validate', async (t) => {
  const caller = await token({ roles: ['crm-sales'] })
  const stream = await openEventStream(url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${caller}`,
  })
  t.teardown(() => stream.close())
  const first = await stream.waitForEvents(1)
  stream.close()
  t.equal(first.event, 'shell', 'the first event as the description says')
  t.same(JSON.parse(first.data), { etag: `"${first.id}"` })
  checker.check(t, EVENTS, { status: stream.status, headers: stream.headers, body: first.data })
  for (const [path, headers] of [
    ['/api/v1/shell/crm/events', {}],
    ['/api/v1/shell/nope/events', { authorization: `Bearer ${caller}` }],
    ['/api/v1/shell/%E0%A4%A/events', { authorization: `Bearer ${caller}` }],
  ] as const) {
    const refused = await openEventStream(url, path, headers)
    checker.check(t, EVENTS, {
      status: refused.status,
      headers: refused.headers,
      body: await refused.body(),
    })
  }

  // Past EVENT_STREAMS_MAX: the 503 of a full instance.
  const limited = await startTestService(t, { logs, db, jwks, env: { EVENT_STREAMS_MAX: '1' } })
  const held = await openEventStream(limited.url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${caller}`,
  })
  t.teardown(() => held.close())
  const full = await openEventStream(limited.url, '/api/v1/shell/crm/events', {
    authorization: `Bearer ${caller}`,
  })
  t.equal(full.status, 503)
  checker.check(t, EVENTS, { status: full.status, headers: full.headers, body: await full.body() })
  held.close()
})

t.test('real responses of the probes, the metrics and the document validate', async (t) => {
  for (const path of UNAUTHENTICATED_PATHS) {
    const response = await httpRequest(url, path)
    t.equal(response.status, 200, path)
    checker.check(t, path, observed(response))
  }
})

t.test('503 before the first snapshot validates on every route that has one', async (t) => {
  const notLoaded = await startServiceWithoutDatabase(t, { logs, jwks, db })
  const caller = await token({ roles: ['crm-sales'] })
  for (const [path, concrete] of [
    [SHELL, '/api/v1/shell/crm'],
    [EVENTS, '/api/v1/shell/crm/events'],
    [APPS, '/api/v1/apps'],
  ] as const) {
    const response = await httpRequest(notLoaded.url, concrete, bearer(caller))
    t.equal(response.status, 503, concrete)
    checker.check(t, path, observed(response))
  }
  const notReady = await httpRequest(notLoaded.url, '/readyz')
  t.equal(notReady.status, 503)
  checker.check(t, '/readyz', observed(notReady))
})

t.test('every declared status was seen in a real response', async (t) => {
  const declared = Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item.get?.responses ?? {}).map((status) => `${path} ${status}`),
  )
  const unseen = declared.filter((entry) => !checker.checked.has(entry))
  // A catch-all error of a route without a path parameter cannot be brought about from outside.
  t.same(
    unseen,
    [APPS, ...UNAUTHENTICATED_PATHS].map((path) => `${path} default`),
  )
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
