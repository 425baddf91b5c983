import t from 'tap'
import { describeTokenForLog } from '../../src/auth/failure-log.js'
import { readMetric } from '../helpers/metrics.js'
import { authenticated, setUpVerifier, type VerifierFixture } from './verifier-fixture.js'

const FAILURE_MESSAGE = 'token verification failed'
const HEADER_FIELDS = ['alg', 'kid', 'typ']
const CLAIM_FIELDS = ['aud', 'azp', 'exp', 'iat', 'iss', 'sub']

const failureLines = (fixture: VerifierFixture) =>
  fixture.log().filter((line) => line.msg === FAILURE_MESSAGE)

/** One token per kind of failure, all carrying claims that must never be logged. */
async function mintBadTokens(fixture: VerifierFixture): Promise<string[]> {
  const { server } = fixture
  const secretClaims = { email: 'ada@example.org', session_state: 'secret-session-value' }
  const valid = await server.sign(secretClaims)
  const [header, payload, signature = ''] = valid.split('.')
  const stranger = await server.addKey({ publish: false })
  return [
    fixture.track(`${header}.${payload}.${signature.slice(0, -4)}AAAA`),
    await server.sign(secretClaims, { expiresInS: -3600 }),
    await server.sign({ ...secretClaims, aud: 'someone-else', azp: 'web' }),
    await server.sign({ ...secretClaims, iss: 'https://evil.example' }),
    await server.sign(secretClaims, { kid: stranger }),
    await server.sign(secretClaims, { forge: 'none' }),
    await server.sign(secretClaims, { forge: 'HS256' }),
    await server.sign({ ...secretClaims, typ: 'Refresh' }),
    await server.sign({ ...secretClaims, padding: 'p'.repeat(9000) }),
    fixture.track(`${header}.not-base64-json!.${signature}`),
  ]
}

t.test('one warn line per failure, with the error and only whitelisted fields', async (t) => {
  const fixture = await setUpVerifier(t)
  const tokens = await mintBadTokens(fixture)
  for (const token of tokens) await authenticated(fixture.verifier, token).catch(() => undefined)
  const lines = failureLines(fixture)
  t.equal(lines.length, tokens.length, 'one line per failure')
  for (const line of lines) {
    t.equal(line.level, 40, 'warn')
    t.type(line.result, 'string')
    const error = line.error as Record<string, unknown>
    t.type(error.name, 'string')
    t.type(error.message, 'string')
    const header = (line.header ?? {}) as Record<string, unknown>
    const claims = (line.claims ?? {}) as Record<string, unknown>
    t.same(
      Object.keys(header).filter((key) => !HEADER_FIELDS.includes(key)),
      [],
      'header whitelist',
    )
    t.same(
      Object.keys(claims).filter((key) => !CLAIM_FIELDS.includes(key)),
      [],
      'claims whitelist',
    )
  }
  const audienceLine = lines.find((line) => line.result === 'invalid_audience')
  t.match(audienceLine, {
    error: {
      name: 'JWTClaimValidationFailed',
      code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
      claim: 'aud',
    },
    header: { alg: 'RS256', typ: 'JWT' },
    claims: { aud: 'someone-else', azp: 'web', sub: 'user-1', iss: fixture.server.issuer },
  })
  t.notOk(
    fixture.rawLog.some((line) => line.includes('secret-session-value')),
    'other claims stay out',
  )
  t.notOk(fixture.rawLog.some((line) => line.includes('ada@example.org')))
  t.same(fixture.leaks(), [], 'no line holds a token or a signature segment')
})

t.test('a provider outage is logged with the fetch failure, not the token', async (t) => {
  const fixture = await setUpVerifier(t)
  fixture.server.setAvailability('status-503')
  await authenticated(fixture.verifier, await fixture.server.sign()).catch(() => undefined)
  t.match(failureLines(fixture), [
    { result: 'keys_unavailable', error: { name: 'KeyFetchError' }, claims: { sub: 'user-1' } },
  ])
  t.match(
    fixture.log().find((line) => line.msg === 'identity provider keys could not be fetched'),
    { reason: 'HTTP 503', keepingLastGoodKeys: false },
  )
  t.same(fixture.leaks(), [])
})

t.test(
  'a flood is rate-limited with a count of what was suppressed; the metric counts all',
  async (t) => {
    const fixture = await setUpVerifier(t)
    const garbage = Array.from({ length: 15 }, (_, n) =>
      fixture.track(`garbage-token-${n}-${'z'.repeat(20)}`),
    )
    for (const token of garbage) await authenticated(fixture.verifier, token).catch(() => undefined)
    t.equal(failureLines(fixture).length, 10, 'at most 10 lines per window')
    t.equal(await readMetric(fixture.metrics.tokenVerifications, { result: 'malformed' }), 15)

    fixture.clock.advance(10_000)
    await authenticated(fixture.verifier, 'one-more-garbage-token').catch(() => undefined)
    const lines = fixture.log()
    const summary = lines.find((line) => typeof line.suppressed === 'number')
    t.match(summary, { level: 40, suppressed: 5 })
    t.equal(
      lines.indexOf(summary as (typeof lines)[number]),
      10,
      'reported when the window rolls over',
    )
    t.equal(failureLines(fixture).length, 11, 'a new window logs again')
    t.same(fixture.leaks(), [])
  },
)

t.test('AUTH_FAILURE_LOG=false logs nothing, the metric still counts', async (t) => {
  const fixture = await setUpVerifier(t, { failureLog: false })
  const tokens = await mintBadTokens(fixture)
  for (const token of tokens) await authenticated(fixture.verifier, token).catch(() => undefined)
  t.same(fixture.rawLog, [])
  const { values } = await fixture.metrics.tokenVerifications.get()
  const counted = values.reduce((sum, value) => sum + value.value, 0)
  t.equal(counted, tokens.length, 'every failure counted')
})

t.test('successful verifications log nothing', async (t) => {
  const fixture = await setUpVerifier(t)
  const token = await fixture.server.sign({ preferred_username: 'ada' })
  await authenticated(fixture.verifier, token)
  await authenticated(fixture.verifier, token)
  await authenticated(fixture.verifier, await fixture.server.sign({ sub: 'other' }))
  t.same(fixture.rawLog, [])
})

t.test('describeTokenForLog decodes defensively', async (t) => {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const header = encode({
    alg: 'RS256',
    kid: 'k1',
    typ: 'JWT',
    jku: 'https://evil.example',
    x5c: ['cert'],
  })
  const payload = encode({
    iss: 'https://id.example',
    aud: ['a', 7, 'b'],
    sub: { not: 'a string' },
    exp: 'soon',
    iat: 1_700_000_000,
    email: 'someone@example.org',
  })
  t.same(describeTokenForLog(`${header}.${payload}.c2lnbmF0dXJl`), {
    header: { alg: 'RS256', kid: 'k1', typ: 'JWT' },
    claims: { iss: 'https://id.example', aud: ['a', 'b'], iat: 1_700_000_000 },
  })
  t.same(describeTokenForLog(`${header}.%%%.sig`), {
    header: { alg: 'RS256', kid: 'k1', typ: 'JWT' },
  })
  t.same(describeTokenForLog('only-one-segment'), {})
  t.same(describeTokenForLog(`${encode([1, 2])}.${encode('text')}.x`), {})
  const long = describeTokenForLog(`${header}.${encode({ sub: 'x'.repeat(5000) })}.sig`)
  t.equal(String(long.claims?.sub).length, 200, 'long values are capped')
})
