import t, { type Test } from 'tap'
import { bearer, type HttpResponse, httpRequest, rawRequest } from '../helpers/http-client.js'
import { startJwksServer } from '../helpers/jwks-server.js'
import { expectProblem } from '../helpers/problem.js'
import {
  createLogCapture,
  startServiceWithoutDatabase,
  startTestService,
} from '../helpers/service.js'
import { waitFor } from '../helpers/wait.js'

/** 401, 404, 405 and 503 through real HTTP: statuses, headers, problem bodies. */

const logs = createLogCapture()
const { url, jwks, token, db } = await startTestService(t, { logs })
const CHALLENGE = 'Bearer realm="shell"'
const INVALID_CHALLENGE =
  /^Bearer realm="shell", error="invalid_token", error_description="[^"\\]+"$/

/** Every header value and the body, as one text, to look for echoes of a token. */
function responseText(response: HttpResponse): string {
  return [
    ...Object.entries(response.headers).map(([name, value]) => `${name}: ${value}`),
    response.text,
  ].join('\n')
}

function expectNoEcho(t: Test, response: HttpResponse, token: string): void {
  const text = responseText(response)
  t.notOk(text.includes(token), 'the token is not echoed')
  for (const segment of token.split('.'))
    if (segment.length >= 16) t.notOk(text.includes(segment), 'no segment of the token is echoed')
}

t.test('no Authorization: Bearer header: 401 with the bare challenge', async (t) => {
  for (const path of ['/api/v1/shell/crm', '/api/v1/apps', '/api/v1/shell/nope']) {
    const variants: Record<string, string>[] = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearerx' },
    ]
    for (const headers of variants) {
      const response = await httpRequest(url, path, { headers })
      const body = expectProblem(t, response, 401)
      t.equal(response.headers['www-authenticate'], CHALLENGE, `${path} ${JSON.stringify(headers)}`)
      t.equal(body.title, 'Unauthorized')
    }
  }
})

t.test('a token that fails verification: 401 invalid_token, nothing of it echoed', async (t) => {
  const tokens: [string, string][] = [
    ['expired', await jwks.sign({}, { expiresInS: -3600 })],
    ['wrong audience', await jwks.sign({ aud: 'someone-else' })],
    ['wrong issuer', await jwks.sign({ iss: 'https://evil.example.com/realms/test' })],
    ['not yet valid', await jwks.sign({ nbf: Math.floor(Date.now() / 1000) + 3600 })],
    ['alg none', await jwks.sign({}, { forge: 'none' })],
    ['HS256', await jwks.sign({}, { forge: 'HS256' })],
    ['an ID token', await jwks.sign({ typ: 'ID' })],
    ['unknown kid', await jwks.sign({}, { headerKid: 'no-such-kid' })],
    ['garbage', logs.track('not-a-jwt-at-all-but-long-enough')],
    [
      'three garbage segments',
      logs.track('aaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbb.cccccccccccccccccccc'),
    ],
  ]
  const good = await jwks.sign({ sub: 'tampered' })
  const [head, payload, signature = ''] = good.split('.')
  const flipped = `${signature.slice(0, 10)}${signature[10] === 'A' ? 'B' : 'A'}${signature.slice(11)}`
  tokens.push(['bad signature', logs.track(`${head}.${payload}.${flipped}`)])
  tokens.push(['over 8 KiB', logs.track(`${head}.${'e'.repeat(9000)}.${signature}`)])
  for (const [what, bad] of tokens) {
    const response = await httpRequest(url, '/api/v1/shell/crm', bearer(bad))
    const body = expectProblem(t, response, 401)
    t.match(response.headers['www-authenticate'], INVALID_CHALLENGE, `${what}: challenge`)
    t.equal(body.title, 'Invalid token')
    expectNoEcho(t, response, bad)
  }
  const apps = await httpRequest(url, '/api/v1/apps', bearer(tokens[0]?.[1] ?? ''))
  expectProblem(t, apps, 401)
  t.match(apps.headers['www-authenticate'], INVALID_CHALLENGE)
})

t.test('unknown app: 404 problem; malformed keys: 404 without a token even', async (t) => {
  const valid = await token({ roles: ['crm-admin'] })
  const unknown = await httpRequest(url, '/api/v1/shell/nope', bearer(valid))
  const body = expectProblem(t, unknown, 404)
  t.equal(body.title, 'Not found')
  const malformed = [
    'CRM',
    'a'.repeat(70),
    'a'.repeat(150),
    'a'.repeat(5000),
    'a_b',
    '-crm',
    'crm.app',
    '%C3%A9t%C3%A9',
    '..',
    '%2e%2e',
  ]
  for (const key of malformed) {
    expectProblem(t, await httpRequest(url, `/api/v1/shell/${key}`, bearer(valid)), 404)
    expectProblem(t, await httpRequest(url, `/api/v1/shell/${key}`), 404)
  }
  expectProblem(t, await httpRequest(url, '/api/v1/shell/', bearer(valid)), 404)
  const longest = `a${'b'.repeat(62)}`
  expectProblem(t, await httpRequest(url, `/api/v1/shell/${longest}`, bearer(valid)), 404)
})

t.test('other methods on API paths: 405 with Allow', async (t) => {
  const valid = await token()
  for (const path of ['/api/v1/apps', '/api/v1/shell/crm', '/api/v1/shell/nope']) {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      const response = await httpRequest(url, path, { method, ...bearer(valid) })
      expectProblem(t, response, 405)
      t.equal(response.headers.allow, 'GET, HEAD', `${method} ${path}`)
    }
  }
  // An empty JSON body would make a body parser fail; the 405 must come first.
  const withBody = await httpRequest(url, '/api/v1/apps', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'content-length': '0' },
  })
  expectProblem(t, withBody, 405)
})

t.test('unknown routes: 404 problem+json', async (t) => {
  const paths = [
    '/',
    '/api',
    '/api/v1',
    '/api/v1/',
    '/api/v1/shell',
    '/api/v1/shell/crm/extra',
    '/api/v2/apps',
    '/favicon.ico',
    '/local-issuer/.well-known/openid-configuration',
  ]
  for (const path of paths) {
    for (const method of ['GET', 'POST']) {
      const response = await httpRequest(url, path, { method, ...bearer(await token()) })
      t.not(response.status, 500, `${method} ${path}`)
      expectProblem(t, response, 404)
    }
  }
})

t.test('requests the HTTP parser refuses get a problem too', async (t) => {
  const malformed = await rawRequest(url, 'GET /api/v1/a b c HTTP/1.1\r\nHost: x\r\n\r\n')
  expectProblem(t, malformed, 400)
  t.equal(malformed.headers.connection, 'close')
  const oversized = await rawRequest(
    url,
    `GET /api/v1/apps HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`,
  ).catch((error: NodeJS.ErrnoException) => error)
  // The answer may be lost to a reset while the oversized request is still being sent.
  if (oversized instanceof Error) t.match(oversized.code, /^(ECONNRESET|EPIPE)$/)
  else expectProblem(t, oversized, 431)
})

t.test('keys unavailable: 503 with Retry-After, ready all along, recovers', async (t) => {
  const provider = await startJwksServer(t)
  provider.setAvailability('reset')
  const down = await startTestService(t, { logs, jwks: provider })
  const callerToken = await down.token({ roles: ['crm-sales'] })
  const response = await httpRequest(down.url, '/api/v1/shell/crm', bearer(callerToken))
  const body = expectProblem(t, response, 503)
  t.match(response.headers['retry-after'], /^\d+$/, 'Retry-After in seconds')
  t.equal(response.headers['www-authenticate'], undefined)
  expectNoEcho(t, response, callerToken)
  t.match(body.detail, /identity provider/)
  provider.setAvailability('status-503')
  const apps = await httpRequest(down.url, '/api/v1/apps', bearer(callerToken))
  expectProblem(t, apps, 503)
  t.match(apps.headers['retry-after'], /^\d+$/)
  const ready = await httpRequest(down.url, '/readyz')
  t.equal(ready.status, 200, 'readiness does not depend on the provider')

  provider.setAvailability('up')
  let recovered = response
  await waitFor(async () => {
    recovered = await httpRequest(down.url, '/api/v1/shell/crm', bearer(callerToken))
    return recovered.status !== 503
  }, 'the provider to be noticed again')
  t.equal(recovered.status, 200, 'recovers without a restart')
})

t.test('no snapshot loaded yet: 503 with Retry-After on every API endpoint', async (t) => {
  const notLoaded = await startServiceWithoutDatabase(t, { logs, jwks, db })
  const valid = await token({ roles: ['crm-sales'] })
  for (const path of ['/api/v1/shell/crm', '/api/v1/shell/crm/events', '/api/v1/apps']) {
    const response = await httpRequest(notLoaded.url, path, bearer(valid))
    const body = expectProblem(t, response, 503)
    t.match(response.headers['retry-after'], /^\d+$/, `${path}: Retry-After`)
    t.equal(body.title, 'Not ready')
    t.notMatch(body.detail, /secret|nobody/, 'no connection string in the detail')
  }
  const anonymous = await httpRequest(notLoaded.url, '/api/v1/apps')
  expectProblem(t, anonymous, 401)
  const malformed = await httpRequest(notLoaded.url, '/api/v1/shell/CRM', bearer(valid))
  expectProblem(t, malformed, 404)
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
})
