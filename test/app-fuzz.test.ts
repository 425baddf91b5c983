import t from 'tap'
import { bearer, type HttpResponse, httpRequest, rawRequest } from './helpers/http-client.js'
import { createLogCapture, startTestService } from './helpers/service.js'

/**
 * Odd paths and headers, sent as raw bytes: whatever arrives, the answer is
 * never a 500, and it is JSON (a problem for every error), never an echo of
 * the token. A seeded generator keeps every run the same; the seed can be
 * changed with SHELL_FUZZ_SEED to explore.
 */

const SEED = Number(process.env.SHELL_FUZZ_SEED ?? 0x5eed)
const REQUEST_COUNT = 400
const CONCURRENCY = 8

const logs = createLogCapture()
const { url, jwks, token } = await startTestService(t, { logs, env: { LOG_REQUESTS: 'true' } })
const validToken = await token({ sub: 'fuzzer', roles: ['crm-sales', 'crm-admin'] })
const expiredToken = await jwks.sign({ sub: 'fuzzer' }, { expiresInS: -3600 })
const validTag = String(
  (await httpRequest(url, '/api/v1/shell/crm', bearer(validToken))).headers.etag,
)

/** mulberry32: small, fast, and the same sequence for the same seed on every platform. */
function createRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let value = state
    value = Math.imul(value ^ (value >>> 15), value | 1)
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61)
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296
  }
}

const random = createRandom(SEED)
const pick = <T>(choices: readonly T[]): T => choices[Math.floor(random() * choices.length)] as T
const integer = (max: number) => Math.floor(random() * max)

/** Random bytes for a path segment: printable, percent-encoded (valid or not), or raw high bytes. */
function randomSegment(): Buffer {
  const parts: Buffer[] = []
  const length = 1 + integer(24)
  for (let index = 0; index < length; index += 1) {
    const kind = integer(38 + (integer(4) === 0 ? 2 : 0))
    // Printable ASCII but '%', which the branches below use on purpose.
    if (kind < 24) parts.push(Buffer.from([pick([0x21 + integer(4), 0x26 + integer(89)])]))
    else if (kind < 30) parts.push(Buffer.from(`%${integer(128).toString(16).padStart(2, '0')}`))
    // Bytes past 0x7f alone are not UTF-8: the URL cannot be decoded.
    else if (kind < 33) parts.push(Buffer.from(`%${integer(256).toString(16).padStart(2, '0')}`))
    else if (kind < 35) parts.push(Buffer.from(pick(['%C3%A9', '%E2%82%AC', '%F0%9F%98%80'])))
    else if (kind < 38) parts.push(Buffer.from(pick(['%', '%z', '%zz', '%G1', '%%', '%u00e9'])))
    // Bytes the HTTP parser itself refuses in a request target: rare, or few requests get past it.
    else parts.push(Buffer.from([pick([0x20, 0x7f, 0x00, 0x80 + integer(128)])]))
  }
  return Buffer.concat(parts)
}

const PREFIXES = [
  // The API's own paths weigh more, so that most odd headers reach authentication.
  '/api/v1/shell/crm',
  '/api/v1/shell/crm',
  '/api/v1/shell/crm',
  '/api/v1/apps',
  '/api/v1/apps',
  '/api/v1/shell/',
  '/api/v1/shell/crm',
  '/api/v1/shell/crm/',
  '/api/v1/apps',
  '/api/v1/apps/',
  '/api/v1/',
  '/api/',
  '/healthz',
  '/readyz',
  '/',
  '//api/v1/apps',
  '/api//v1/shell/crm',
  '/api/v1/shell/../apps',
  '/api/v1/shell/./crm',
  '/local-issuer/.well-known/openid-configuration',
]

const QUERIES = [
  '',
  '',
  '',
  '?',
  '?a=1',
  '?a=%zz&&=&b',
  '?x[]=1&x[]=2',
  '?__proto__[a]=1',
  `?q=${'q'.repeat(3000)}`,
  '?%',
]

function randomPath(): Buffer {
  const shape = integer(10)
  const prefix = Buffer.from(pick(PREFIXES))
  const query = Buffer.from(pick(QUERIES))
  if (shape < 4) return Buffer.concat([prefix, query])
  if (shape < 6) return Buffer.concat([prefix, randomSegment(), query])
  if (shape < 7) return Buffer.concat([prefix, Buffer.from('a'.repeat(200 + integer(8000))), query])
  if (shape < 8)
    return Buffer.concat([
      prefix,
      ...Array.from({ length: 1 + integer(6) }, () =>
        Buffer.concat([randomSegment(), Buffer.from('/')]),
      ),
    ])
  if (shape < 9)
    return Buffer.concat([
      prefix,
      Buffer.from(
        pick([
          '..',
          '.',
          '%2e%2e',
          '..%2f..%2fetc',
          '%2F',
          '/',
          '//',
          '%00',
          'crm%00',
          'CRM',
          'crm ',
          'crm\t',
        ]),
      ),
      query,
    ])
  return Buffer.from(
    pick(['*', 'http://evil.example.com/api/v1/apps', 'api/v1/apps', '/%', '/%%%']),
  )
}

function randomAuthorization(): Buffer | null {
  const choices: (() => Buffer | null)[] = [
    () => null,
    () => Buffer.from(`Bearer ${validToken}`),
    () => Buffer.from(`bearer ${validToken}`),
    () => Buffer.from(`Bearer ${expiredToken}`),
    () => Buffer.from('Bearer'),
    () => Buffer.from('Bearer '),
    () => Buffer.from('Bearer  x'),
    () => Buffer.from('bearer x'),
    () => Buffer.from('BEARER x'),
    () => Buffer.from('Basic x'),
    () => Buffer.from('Basic dXNlcjpwYXNz'),
    () => Buffer.from(`Bearer ${'a'.repeat(10 * 1024)}`),
    () =>
      Buffer.from(
        `Bearer ${logs.track(`${'e'.repeat(4000)}.${'f'.repeat(4000)}.${'g'.repeat(2300)}`)}`,
      ),
    () => Buffer.from('Bearer ...'),
    () => Buffer.from('Bearer .'),
    () => Buffer.from(`Bearer ${'.'.repeat(integer(100))}`),
    () => Buffer.from(`Bearer ${validToken}x`),
    () => Buffer.from(`Bearer ${validToken.split('.').slice(0, 2).join('.')}.`),
    () => Buffer.from(`Bearer ${validToken}, Bearer ${validToken}`),
    () => Buffer.concat([Buffer.from('Bearer '), Buffer.from([0xe9, 0xe8, 0xff, 0x80])]),
    () => Buffer.concat([Buffer.from('Bearer '), Buffer.from('日本語.トークン.署名', 'utf8')]),
    () => Buffer.concat([Buffer.from('Bearer '), randomSegment()]),
    () => Buffer.from('Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'),
    () => Buffer.from('Bearer eyJhbGciOiJSUzI1NiJ9.bm90LWpzb24.c2ln'),
    () => Buffer.from('Bearer e30.e30.e30'),
    () => Buffer.from('Bearer W10.W10.W10'),
  ]
  return pick(choices)()
}

function randomIfNoneMatch(): Buffer | null {
  const choices: (() => Buffer | null)[] = [
    () => null,
    () => null,
    () => Buffer.from('*'),
    () => Buffer.from(validTag),
    () => Buffer.from(`W/${validTag}`),
    () => Buffer.from('W/'),
    () => Buffer.from('"'),
    () => Buffer.from('""'),
    () => Buffer.from(',,,'),
    () => Buffer.from(','.repeat(2000)),
    () => Buffer.from(`${'"x", '.repeat(500)}${validTag}`),
    () => Buffer.from('*, "x", W/"y"'),
    () => Buffer.from([0xe9, 0x22, 0xff, 0x22]),
    () => randomSegment(),
  ]
  return pick(choices)()
}

const METHODS = [
  ...Array.from({ length: 12 }, () => 'GET'),
  'HEAD',
  'HEAD',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'OPTIONS',
  'PATCH',
  'TRACE',
  'PROPFIND',
  'get',
]

interface FuzzCase {
  readonly index: number
  readonly bytes: Buffer
  readonly method: string
  readonly path: Buffer
  readonly secrets: string[]
}

function buildCase(index: number): FuzzCase {
  const method = pick(METHODS)
  const path = randomPath()
  const headers: Buffer[] = [Buffer.from('Host: localhost\r\n')]
  const secrets: string[] = []
  const authorization = randomAuthorization()
  if (authorization !== null) {
    headers.push(
      Buffer.concat([Buffer.from('Authorization: '), authorization, Buffer.from('\r\n')]),
    )
    const credential = authorization.toString('latin1').split(' ').at(-1) ?? ''
    if (credential.length >= 16) secrets.push(credential)
  }
  const ifNoneMatch = randomIfNoneMatch()
  if (ifNoneMatch !== null)
    headers.push(Buffer.concat([Buffer.from('If-None-Match: '), ifNoneMatch, Buffer.from('\r\n')]))
  if (integer(6) === 0)
    headers.push(
      Buffer.from(
        `Accept: ${pick(['*/*', 'text/html', 'application/problem+json', 'x'.repeat(500)])}\r\n`,
      ),
    )
  // A truncated JSON body: a parser, if one ran, would fail on it.
  const body = integer(8) === 0 ? Buffer.from('{"a":') : Buffer.alloc(0)
  if (body.length > 0)
    headers.push(
      Buffer.from(`Content-Type: application/json\r\nContent-Length: ${body.length}\r\n`),
    )
  const bytes = Buffer.concat([
    Buffer.from(`${method} `),
    path,
    Buffer.from(' HTTP/1.1\r\n'),
    ...headers,
    Buffer.from('Connection: close\r\n\r\n'),
    body,
  ])
  return { index, bytes, method, path, secrets }
}

const cases = Array.from({ length: REQUEST_COUNT }, (_, index) => buildCase(index))
const results: { fuzzCase: FuzzCase; response: HttpResponse }[] = []
const resets: { fuzzCase: FuzzCase; error: NodeJS.ErrnoException }[] = []
for (let start = 0; start < cases.length; start += CONCURRENCY) {
  const batch = cases.slice(start, start + CONCURRENCY)
  await Promise.all(
    batch.map((fuzzCase) =>
      rawRequest(url, fuzzCase.bytes).then(
        (response) => results.push({ fuzzCase, response }),
        (error: NodeJS.ErrnoException) => resets.push({ fuzzCase, error }),
      ),
    ),
  )
}
/** Node's default limit on the request line and headers; past it the server answers 431 and closes. */
const MAX_HEADER_BYTES = 16 * 1024

/** Statuses of requests refused before routing: malformed, timed out, headers too large. */
const PARSER_STATUSES = new Set([400, 408, 431])

function describe(fuzzCase: FuzzCase): string {
  const request = fuzzCase.bytes.toString('latin1').split('\r\n')[0] ?? ''
  return `#${fuzzCase.index} ${request.slice(0, 120)}${request.length > 120 ? '…' : ''}`
}

t.test(`${REQUEST_COUNT} odd requests (seed ${SEED}): never a 500, always JSON`, async (t) => {
  const statuses = new Map<number, number>()
  for (const { fuzzCase, response } of results) {
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    const what = describe(fuzzCase)
    if (response.status < 200 || (response.status >= 500 && response.status !== 503)) {
      t.fail(`${what}: status ${response.status}`, { body: response.text.slice(0, 500) })
      continue
    }
    // A request the HTTP parser refuses is answered before anyone knows it was a HEAD.
    const refusedByParser = PARSER_STATUSES.has(response.status) && response.body.length > 0
    const noBody = (fuzzCase.method === 'HEAD' && !refusedByParser) || response.status === 304
    if (noBody) {
      if (response.body.length !== 0)
        t.fail(`${what}: a body on a ${response.status} to ${fuzzCase.method}`)
      continue
    }
    const contentType = String(response.headers['content-type'] ?? '')
    const expected = response.status >= 400 ? /^application\/problem\+json/ : /^application\/json/
    if (!expected.test(contentType)) {
      t.fail(`${what}: ${response.status} as ${contentType || 'no content type'}`, {
        body: response.text.slice(0, 300),
      })
      continue
    }
    let body: unknown
    try {
      body = JSON.parse(response.text)
    } catch {
      t.fail(`${what}: a body that is not JSON`, { body: response.text.slice(0, 300) })
      continue
    }
    if (response.status >= 400) {
      const keys = Object.keys(body as object)
        .sort()
        .join(',')
      if (keys !== 'detail,status,title,type') t.fail(`${what}: problem keys ${keys}`)
    }
    const text = `${JSON.stringify(response.headers)}\n${response.text}`
    for (const secret of fuzzCase.secrets)
      if (text.includes(secret)) t.fail(`${what}: the response echoes the credential`)
  }
  // An oversized request may be reset while it is still being sent, its 431 lost on the way.
  for (const { fuzzCase, error } of resets) {
    if (fuzzCase.bytes.length <= MAX_HEADER_BYTES || !/^(ECONNRESET|EPIPE)$/.test(error.code ?? ''))
      t.fail(`${describe(fuzzCase)}: no answer (${error.message})`)
  }
  t.comment(
    `statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`,
  )
  t.ok(statuses.get(200), 'some requests got through')
  t.ok(statuses.get(401), 'some were refused')
  t.ok(statuses.get(404), 'some found nothing')
})

t.test('the service still serves after the fuzzing', async (t) => {
  const response = await httpRequest(url, '/api/v1/shell/crm', bearer(validToken))
  t.equal(response.status, 200)
  t.equal((await httpRequest(url, '/healthz')).status, 200)
})

t.test('no log line holds a token or its signature', async (t) => {
  t.same(logs.leaks(), [])
  t.ok(logs.lines.length > REQUEST_COUNT, 'requests were logged (LOG_REQUESTS=true)')
})
